/**
 * Runs the real deno-kube-proxy as a subprocess inside a topology's node namespace, under the
 * project's permission set (`-P=proxy`), fed by a manifest directory the test writes.
 */
import {
  DENO_RUN_PROGRAM,
  type NodeIptablesFlavour,
  type ProxyProgram,
  proxyRunArgs,
  REPO_ROOT,
  requireCommands,
  requireNetnsSupport,
  type SpawnedProcess,
  spawnProxy,
  type SpawnProxyOptions,
  type Topology,
} from "../../../scripts/netns/mod.ts";
import { waitFor } from "../../support/wait.ts";

/** Parent of every manifest folder the tests write; readable under the proxy permission set. */
export const MANIFEST_ROOT = "/tmp/deno-kube-proxy";

/**
 * Fails loudly unless this machine can run the real-kernel tests (with this iptables flavour
 * and the `more` binaries a mode needs).
 */
export async function requireRealKernel(
  flavour: NodeIptablesFlavour = "legacy",
  more: readonly string[] = [],
): Promise<void> {
  await requireNetnsSupport();
  requireCommands(["ip", "iptables-legacy", "iptables-legacy-save", "iptables-legacy-restore"]);
  requireCommands(more);
  if (flavour === "nft") {
    requireCommands(["iptables-nft", "iptables-nft-save", "iptables-nft-restore", "nft"]);
  }
}

/** A manifest folder for one test, written atomically (tmp file + rename). */
export class ManifestDir {
  /** `name` must be unique per test. */
  constructor(readonly path: string) {}

  /** Creates an empty folder under MANIFEST_ROOT. */
  static async create(name: string): Promise<ManifestDir> {
    const path = `${MANIFEST_ROOT}/${name}`;
    await Deno.remove(path, { recursive: true }).catch(() => {});
    await Deno.mkdir(path, { recursive: true });
    return new ManifestDir(path);
  }

  /** Replaces `file` with `doc` as JSON, the way config tools do (write, then rename over). */
  async write(file: string, doc: unknown): Promise<void> {
    const tmp = `${this.path}/.${file}.tmp`;
    await Deno.writeTextFile(tmp, JSON.stringify(doc, null, 2));
    await Deno.rename(tmp, `${this.path}/${file}`);
  }

  /** Removes the folder. */
  async remove(): Promise<void> {
    await Deno.remove(this.path, { recursive: true }).catch(() => {});
  }
}

const DEFAULT_ARGS: readonly string[] = [
  "--hostname-override=node1",
  "--cluster-cidr=10.0.0.0/8",
  "--iptables-min-sync-period=1s",
  "--healthz-bind-address=127.0.0.1:10256",
  "--metrics-bind-address=127.0.0.1:10249",
  "-v=2",
];

/** The default flags the caller does not set itself (list flags would otherwise add up), then `args`. */
function withDefaults(args: readonly string[]): string[] {
  const given = new Set(args.map((a) => a.split("=")[0]));
  return [...DEFAULT_ARGS.filter((a) => !given.has(a.split("=")[0])), ...args];
}

/** Runs main.ts with the test defaults and `args` in the namespace and waits until it is ready. */
export function startProxy(
  topo: Topology,
  args: readonly string[],
  options: SpawnProxyOptions = {},
): Promise<SpawnedProcess> {
  return spawnProxy(topo, withDefaults(args), options);
}

/** Runs the program once (e.g. `--cleanup`) in the namespace and returns its exit code and output. */
export async function runProxyOnce(
  topo: Topology,
  args: readonly string[],
  program: ProxyProgram = DENO_RUN_PROGRAM,
) {
  return await topo.exec("node", program.cmd, program.args(args));
}

/** Runs main.ts once on the host, outside any namespace, under the permission set. */
export async function runMain(args: readonly string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: proxyRunArgs(args),
    cwd: REPO_ROOT,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Polls `check` every 100 ms until it returns true or `timeoutMs` passes; returns elapsed ms. */
export function eventually(
  what: string,
  timeoutMs: number,
  check: () => Promise<boolean>,
): Promise<number> {
  return waitFor(what, check, timeoutMs, 100);
}
