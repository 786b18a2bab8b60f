/**
 * One e2e scenario: a topology, a manifest folder holding `state`, echo servers and the running
 * proxy; everything is removed afterwards, even when the body fails (whose logs are printed).
 */
import type {
  EchoPorts,
  NodeIptablesFlavour,
  ProxyProgram,
  SpawnedProcess,
  TopologyOptions,
} from "../../../scripts/netns/mod.ts";
import { startProxy } from "./proxy_process.ts";
import { type TopologyContext, withTopology } from "./with_topology.ts";

/** What a scenario is made of. */
export interface ProxyScenario extends TopologyOptions {
  /** More binaries the test needs on the node (a mode's tools); missing ones fail loudly. */
  readonly requireCommands?: readonly string[];
  /** The cluster state written to `cluster.json` before the proxy starts. */
  readonly state: unknown;
  /** Extra program flags (after the defaults of startProxy). */
  readonly args?: readonly string[];
  /** Echo server ports for every pod; false for none. */
  readonly echo?: EchoPorts | false;
  /** Which iptables the node is marked as using (see spawnProxy); default legacy. */
  readonly flavour?: NodeIptablesFlavour;
  /** What runs as the proxy (see spawnProxy); default main.ts under this deno. */
  readonly program?: ProxyProgram;
}

/** What the body works with. */
export interface ProxyContext extends TopologyContext {
  readonly proxy: SpawnedProcess;
}

/** Runs `body` against a running proxy in a fresh topology, then tears everything down. */
export function withProxy(
  scenario: ProxyScenario,
  body: (ctx: ProxyContext) => Promise<void>,
): Promise<void> {
  const { state, args = [], echo = {}, flavour = "legacy", program, ...topology } = scenario;
  return withTopology({ ...topology, flavour }, async ({ topo, dir }) => {
    await dir.write("cluster.json", state);
    if (echo !== false) await topo.startEchoServers(echo);
    const proxy = await startProxy(topo, [`--manifests=${dir.path}`, ...args], {
      flavour,
      ...(program !== undefined ? { program } : {}),
    });
    await body({ topo, dir, proxy });
  });
}
