/**
 * The program itself (main.ts) as operators run it: under the project's permission set
 * (`-P=proxy`), inside a topology's node namespace that kubelet has marked with its iptables
 * flavour. Shared by the demo and the e2e tests.
 */
import { runtimeArgs } from "../runtime_flags.ts";
import type { SpawnedProcess } from "./process.ts";
import { scaledMs } from "./time_scale.ts";
import type { Topology } from "./topology.ts";

/** The repository root (where deno.json and main.ts live). */
export const REPO_ROOT = new URL("../../", import.meta.url).pathname;

/** The `deno` arguments that run main.ts with `args` under the proxy permission set. */
export function proxyRunArgs(args: readonly string[]): string[] {
  return ["run", "-P=proxy", ...runtimeArgs(), "--quiet", `${REPO_ROOT}main.ts`, ...args];
}

/**
 * How the program is started: a command, the arguments that make it run the program with the
 * program's own `args`, and a working directory. The default runs main.ts with this deno; an
 * image test runs the image's entry point from its root filesystem instead.
 */
export interface ProxyProgram {
  readonly cmd: string;
  readonly args: (programArgs: readonly string[]) => string[];
  readonly cwd?: string;
}

/** main.ts under `deno run -P=proxy` from this repository. */
export const DENO_RUN_PROGRAM: ProxyProgram = {
  cmd: Deno.execPath(),
  args: proxyRunArgs,
  cwd: REPO_ROOT,
};

/** Which iptables the node is marked as using, the way kubelet marks it. */
export type NodeIptablesFlavour = "legacy" | "nft";

/** Options of spawnProxy. */
export interface SpawnProxyOptions {
  /** Create kubelet's KUBE-IPTABLES-HINT chain with this flavour's iptables; default legacy. */
  readonly flavour?: NodeIptablesFlavour;
  /** Extra environment of the program. */
  readonly env?: Readonly<Record<string, string>>;
  /** Output that means the program is ready; default its first applied sync (needs -v=2). */
  readonly ready?: RegExp;
  /** How long to wait for `ready`; default 30 s (times E2E_TIME_SCALE). */
  readonly timeoutMs?: number;
  /** Label of the process in the topology's logs; default "proxy". */
  readonly label?: string;
  /** What runs; default DENO_RUN_PROGRAM. */
  readonly program?: ProxyProgram;
}

/** Runs the program with exactly `args` in the node namespace and waits until it is ready. */
export async function spawnProxy(
  topo: Topology,
  args: readonly string[],
  options: SpawnProxyOptions = {},
): Promise<SpawnedProcess> {
  // Like kubelet, mark the node's iptables flavour (legacy by default: iptables-nft is ~14x
  // slower here), so the program's detection has something to find.
  const flavour = options.flavour ?? "legacy";
  const hint = await topo.exec("node", `iptables-${flavour}`, [
    "-t",
    "mangle",
    "-N",
    "KUBE-IPTABLES-HINT",
  ]);
  if (hint.code !== 0 && !hint.stderr.includes("exists")) throw new Error(hint.stderr);
  const program = options.program ?? DENO_RUN_PROGRAM;
  const proc = topo.spawn("node", program.cmd, program.args(args), {
    ...(program.cwd !== undefined ? { cwd: program.cwd } : {}),
    label: options.label ?? "proxy",
    ...(options.env !== undefined ? { env: options.env } : {}),
  });
  await proc.waitForOutput(
    options.ready ?? /SyncProxyRules complete/,
    options.timeoutMs ?? scaledMs(30_000),
  );
  return proc;
}
