/**
 * The program's start-up against the test API server, as operators run it: main.ts under
 * `-P=proxy` with `--kubeconfig` in a throwaway network namespace (`kpf-su-<n>`; see STARTUP_NETNS_PREFIX) that reaches the
 * server through the namespace bridge at 127.0.0.1:6443, the node marked iptables-legacy (or
 * iptables-nft) by kubelet's hint chain. Times
 * process start → both lists in ("Initial list complete" for Service and EndpointSlice) and →
 * the first "SyncProxyRules complete", and reads the process's VmRSS/VmHWM. Needs root, socat,
 * iproute2 and iptables-legacy (iptables-nft for an nft lab). Relies only on the program's stable CLI and log lines.
 */
import { denoInfo } from "../scripts/build.ts";
import { proxyRunArgs, spawnInNamespace } from "../scripts/netns/mod.ts";
import {
  exposeInNamespace,
  KUBE_FILES_ROOT,
  type NamespaceBridge,
  startTestApiServer,
  type TestApiServer,
  writeKubeconfig,
} from "../tests/support/api_server/mod.ts";
import { testPki } from "../tests/k8s/api_support.ts";
import { fillBenchCluster } from "./api_objects.ts";

/**
 * Prefix of the lab namespaces: `kpf` unless BENCH_NETNS_PREFIX names another (so that runs
 * beside each other on one machine keep apart).
 */
const STARTUP_NETNS_PREFIX = Deno.env.get("BENCH_NETNS_PREFIX") ?? "kpf";

/** One start-up's figures. */
export interface StartupFigures {
  /** Process start → Service and EndpointSlice lists in, ms. */
  readonly listsMs: number;
  /** Process start → first SyncProxyRules complete, ms. */
  readonly completeMs: number;
  /** VmRSS after `settleMs` more, kB. */
  readonly settledRssKb: number;
  /** CPU (own + children) used while idle for the `idleMs` asked of startOnce. */
  readonly idleCpuMs: number;
  /** VmHWM (peak resident) at that time, kB. */
  readonly peakRssKb: number;
  /**
   * Of the resident memory at that time, the pages of files in DENO_DIR (Deno's SQLite caches
   * of module analysis, mapped by `deno run`; a `deno compile`d binary maps none), kB. They vary
   * with where a checkout's entries sit in those files.
   */
  readonly denoDirRssKb: number;
}

/** A namespace + API server + bridge + kubeconfig for N services. */
export interface StartupLab {
  readonly ns: string;
  readonly services: number;
  /** The iptables the node is marked as using. */
  readonly flavour: "legacy" | "nft";
  readonly server: TestApiServer;
  readonly kubeconfig: string;
  close(): Promise<void>;
}

async function ip(args: string[]): Promise<Deno.CommandOutput> {
  return await new Deno.Command("ip", { args, stdout: "piped", stderr: "piped" }).output();
}

/** Creates the lab (removed by close(), and at process exit). */
export async function createStartupLab(
  services: number,
  flavour: "legacy" | "nft" = "legacy",
): Promise<StartupLab> {
  const ns = flavour === "legacy"
    ? `${STARTUP_NETNS_PREFIX}-su-${services}`
    : `${STARTUP_NETNS_PREFIX}-su-nft-${services}`;
  await ip(["netns", "del", ns]);
  const add = await ip(["netns", "add", ns]);
  if (add.code !== 0) throw new Error(new TextDecoder().decode(add.stderr));
  await ip(["-n", ns, "link", "set", "lo", "up"]);
  const dir = `${KUBE_FILES_ROOT}/${ns}-${Deno.pid}`;
  let server: TestApiServer | undefined;
  let bridge: NamespaceBridge | undefined;
  const close = async () => {
    await bridge?.close();
    await server?.close();
    await ip(["netns", "del", ns]);
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  };
  globalThis.addEventListener("unload", () => {
    new Deno.Command("ip", { args: ["netns", "del", ns] }).outputSync();
    try {
      Deno.removeSync(dir, { recursive: true });
    } catch {
      // already removed by close()
    }
  });
  try {
    const pki = await testPki();
    server = await startTestApiServer({ pki });
    fillBenchCluster(server, services);
    bridge = await exposeInNamespace({ namespace: ns, serverPort: server.port, dir });
    const kubeconfig = await writeKubeconfig({ dir, server: bridge.url, pki });
    const hint = await ip([
      "netns",
      "exec",
      ns,
      `iptables-${flavour}`,
      "-t",
      "mangle",
      "-N",
      "KUBE-IPTABLES-HINT",
    ]);
    if (hint.code !== 0) throw new Error(new TextDecoder().decode(hint.stderr));
    return { ns, services, flavour, server, kubeconfig, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** The program as startOnce runs it in the lab's namespace (`-v=2`, `extraArgs` last). */
export function spawnLabProxy(
  lab: StartupLab,
  extraArgs: readonly string[] = [],
): ReturnType<typeof spawnInNamespace> {
  return spawnInNamespace(
    lab.ns,
    Deno.execPath(),
    proxyRunArgs([
      `--kubeconfig=${lab.kubeconfig}`,
      "--hostname-override=node1",
      "--cluster-cidr=10.0.0.0/8",
      "--healthz-bind-address=127.0.0.1:10256",
      "--metrics-bind-address=127.0.0.1:10249",
      "-v=2",
      ...extraArgs,
    ]),
    { label: "proxy" },
  );
}

/**
 * CPU time of `pid` itself (utime + stime) and of its waited-for children (cutime + cstime: the
 * netadmin binaries it ran), in ms.
 */
export function cpuSplitMs(pid: number): [own: number, children: number] {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  // Fields after the command name: utime, stime, cutime, cstime are the 12th-15th of them.
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ").map(Number);
  return [(f[11]! + f[12]!) * 10, (f[13]! + f[14]!) * 10]; // USER_HZ is 100 on Linux
}

/** CPU time of `pid` and its waited-for children, in ms. */
function cpuMs(pid: number): number {
  const [own, children] = cpuSplitMs(pid);
  return own + children;
}

/** VmRSS and VmHWM of `pid`, kB. */
export function memory(pid: number): { rss: number; hwm: number } {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const kb = (name: string) => Number(status.match(new RegExp(`${name}:\\s+(\\d+)`))?.[1] ?? NaN);
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** Resident kB of the mappings of `pid` whose file lies under `dir`. */
export function residentUnderKb(pid: number, dir: string): number {
  const prefix = dir.endsWith("/") ? dir : `${dir}/`;
  let inside = false;
  let total = 0;
  for (const line of Deno.readTextFileSync(`/proc/${pid}/smaps`).split("\n")) {
    const mapping = line.match(/^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \S+\s*(.*)$/);
    if (mapping) {
      inside = mapping[1]!.startsWith(prefix);
      continue;
    }
    const rss = inside ? line.match(/^Rss:\s+(\d+)/) : null;
    if (rss) total += Number(rss[1]);
  }
  return total;
}

let denoDir: Promise<string> | undefined;

/**
 * Starts the program once, waits for its first complete sync, measures, and stops it;
 * `extraArgs` come after the defaults (e.g. `--proxy-mode=nftables`); each wait for a log
 * line gives up after `timeoutMs`.
 */
export async function startOnce(
  lab: StartupLab,
  settleMs = 0,
  idleMs = 0,
  extraArgs: readonly string[] = [],
  timeoutMs = 120_000,
): Promise<StartupFigures> {
  const start = performance.now();
  const proc = spawnLabProxy(lab, extraArgs);
  try {
    const timeout = timeoutMs;
    await proc.waitForOutput(/Initial list complete[^\n]*Service\b(?!Slice)/, timeout);
    await proc.waitForOutput(/Initial list complete[^\n]*EndpointSlice/, timeout);
    const listsMs = performance.now() - start;
    await proc.waitForOutput(/SyncProxyRules complete/, timeout);
    const completeMs = performance.now() - start;
    if (settleMs > 0) await new Promise((r) => setTimeout(r, settleMs));
    const { rss, hwm } = memory(proc.pid);
    const denoDirRssKb = residentUnderKb(
      proc.pid,
      await (denoDir ??= denoInfo().then((i) => i.denoDir)),
    );
    const cpuBefore = cpuMs(proc.pid);
    if (idleMs > 0) await new Promise((r) => setTimeout(r, idleMs));
    const idleCpuMs = cpuMs(proc.pid) - cpuBefore;
    return { listsMs, completeMs, settledRssKb: rss, peakRssKb: hwm, denoDirRssKb, idleCpuMs };
  } catch (err) {
    console.error(proc.output().slice(-4000));
    throw err;
  } finally {
    await proc.kill(5_000);
  }
}

/** The floor: an empty Deno process, start to exit, ms. */
export async function emptyDenoMs(): Promise<number> {
  const file = `${KUBE_FILES_ROOT}/kpf-empty.ts`;
  await Deno.mkdir(KUBE_FILES_ROOT, { recursive: true });
  await Deno.writeTextFile(file, "");
  const start = performance.now();
  await new Deno.Command(Deno.execPath(), { args: ["run", "--quiet", "--no-config", file] })
    .output();
  return performance.now() - start;
}

/** Empties nat, filter and mangle in the lab, leaving kubelet's hint chain: a new node. */
export async function emptyNodeTables(lab: StartupLab): Promise<void> {
  for (const table of ["nat", "filter", "mangle"]) {
    for (const op of ["-F", "-X"]) {
      const out = await ip(["netns", "exec", lab.ns, `iptables-${lab.flavour}`, "-t", table, op]);
      if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
    }
  }
  const hint = ["-t", "mangle", "-N", "KUBE-IPTABLES-HINT"];
  const out = await ip(["netns", "exec", lab.ns, `iptables-${lab.flavour}`, ...hint]);
  if (out.code !== 0) throw new Error(new TextDecoder().decode(out.stderr));
}

/** The tables the program wrote, as the lab's iptables-save prints them. */
export async function savedRules(lab: StartupLab): Promise<string> {
  const out = await ip(["netns", "exec", lab.ns, `iptables-${lab.flavour}-save`]);
  return new TextDecoder().decode(out.stdout);
}
