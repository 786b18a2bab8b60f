/**
 * Packet-flow cases as data, run against a chosen proxy mode: a table is a cluster state plus
 * cases (source, protocol, destination, endpoints that may answer, masquerade), and a case may
 * carry a per-mode expectation where upstream's modes differ (e.g. localhost NodePorts are
 * served in iptables mode only). One runner executes a table in the e2e topology.
 */
import type { ProxyModeName } from "../../../lib/backends/mod.ts";
import type { PodSpec, ProxyProgram } from "../../../scripts/netns/mod.ts";
import { dumpModeState, E2E_MODES } from "./e2e_modes.ts";
import { checkFlows, type FlowCheck } from "./flow_check.ts";
import { type ProxyContext, withProxy } from "./with_proxy.ts";

/** What a case expects, which a mode may override. */
export type FlowExpectation = Pick<FlowCheck, "expect" | "masq" | "masqSource">;

/** One case of a table. */
export interface FlowCase extends FlowCheck {
  /** Where a mode behaves otherwise (as upstream's does), its expectation for this case. */
  readonly byMode?: Partial<Record<ProxyModeName, Partial<FlowExpectation>>>;
}

/** One table: a cluster state and the cases probed against it, under one proxy run. */
export interface FlowTable {
  /** The test's name, after the mode. */
  readonly name: string;
  /** Up to six letters or digits; the mode's tag goes in front to name the namespaces. */
  readonly stem: string;
  readonly pods: readonly PodSpec[];
  readonly remotePods?: readonly PodSpec[];
  readonly ipv6?: boolean;
  /** Services, EndpointSlices and the Node, as a `List`. */
  readonly state: unknown;
  readonly echo: { readonly tcp: readonly number[]; readonly udp: readonly number[] };
  /** Extra program flags. */
  readonly args?: readonly string[];
  readonly cases: readonly FlowCase[];
}

/** The cases of a table as `mode` must see them. */
export function casesFor(mode: ProxyModeName, cases: readonly FlowCase[]): FlowCheck[] {
  return cases.map(({ byMode, ...c }) => ({ ...c, ...byMode?.[mode] }));
}

/** How a table is run; the defaults are those of every mode's flow tests. */
export interface FlowTableRun {
  /** Network-namespace prefix; default the mode's tag and the table's stem. */
  readonly prefix?: string;
  /** What runs as the proxy; default main.ts under this deno (see spawnProxy). */
  readonly program?: ProxyProgram;
  /** More checks after the cases pass, while the proxy still runs in the same topology. */
  readonly afterCases?: (ctx: ProxyContext) => Promise<void>;
}

/** Runs one table against `mode` in a fresh topology; a failure prints the mode's rules. */
export async function runFlowTable(
  mode: ProxyModeName,
  table: FlowTable,
  run: FlowTableRun = {},
): Promise<void> {
  const support = E2E_MODES[mode];
  await withProxy({
    prefix: run.prefix ?? `${support.tag}${table.stem}`,
    ...(run.program !== undefined ? { program: run.program } : {}),
    ipv6: table.ipv6 ?? false,
    pods: table.pods,
    remotePods: table.remotePods ?? [],
    state: table.state,
    echo: { tcp: [...table.echo.tcp], udp: [...table.echo.udp] },
    args: [`--proxy-mode=${mode}`, ...table.args ?? []],
    requireCommands: support.commands,
  }, async (ctx) => {
    const { topo } = ctx;
    try {
      await checkFlows(topo, casesFor(mode, table.cases));
      await run.afterCases?.(ctx);
    } catch (err) {
      console.error(await dumpModeState(topo, support));
      throw err;
    }
  });
}

/** Registers one Deno test per table, run against `mode`. */
export function registerFlowTables(mode: ProxyModeName, tables: readonly FlowTable[]): void {
  for (const table of tables) {
    Deno.test(`e2e [${mode}]: ${table.name}`, () => runFlowTable(mode, table));
  }
}
