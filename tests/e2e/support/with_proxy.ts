/**
 * One e2e scenario: a topology, a manifest folder holding `state`, echo servers and the running
 * proxy; everything is removed afterwards, even when the body fails (whose logs are printed).
 */
import {
  createTopology,
  type EchoPorts,
  type SpawnedProcess,
  type Topology,
  type TopologyOptions,
} from "../../../scripts/netns/mod.ts";
import {
  ManifestDir,
  type NodeIptablesFlavour,
  requireRealKernel,
  startProxy,
} from "./proxy_process.ts";

/** What a scenario is made of. */
export interface ProxyScenario extends TopologyOptions {
  /** The cluster state written to `cluster.json` before the proxy starts. */
  readonly state: unknown;
  /** Extra program flags (after the defaults of startProxy). */
  readonly args?: readonly string[];
  /** Echo server ports for every pod; false for none. */
  readonly echo?: EchoPorts | false;
  /** Which iptables the node is marked as using (see startProxy); default legacy. */
  readonly flavour?: NodeIptablesFlavour;
}

/** What the body works with. */
export interface ProxyContext {
  readonly topo: Topology;
  readonly dir: ManifestDir;
  readonly proxy: SpawnedProcess;
}

/** Runs `body` against a running proxy in a fresh topology, then tears everything down. */
export async function withProxy(
  scenario: ProxyScenario,
  body: (ctx: ProxyContext) => Promise<void>,
): Promise<void> {
  await requireRealKernel(scenario.flavour);
  const { state, args = [], echo = {}, flavour = "legacy", ...topology } = scenario;
  const topo = await createTopology(topology);
  const dir = await ManifestDir.create(scenario.prefix);
  try {
    await dir.write("cluster.json", state);
    if (echo !== false) await topo.startEchoServers(echo);
    const proxy = await startProxy(topo, [`--manifests=${dir.path}`, ...args], { flavour });
    await body({ topo, dir, proxy });
  } catch (err) {
    console.error(topo.logs());
    throw err;
  } finally {
    await topo.destroy();
    await dir.remove();
  }
}
