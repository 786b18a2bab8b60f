/**
 * Throwaway network namespaces for the benchmarks, a command runner that runs inside one, and
 * the raw `iptables-legacy-restore` baseline. Namespaces are removed when the process exits,
 * also after a failed bench or Ctrl-C.
 */
import { type CommandRunner, denoCommandRunner } from "../lib/exec/mod.ts";
import {
  addNamespaces,
  deleteStaleNamespaces,
  requireCommands,
  requireNetnsSupport,
} from "../scripts/netns/mod.ts";

/**
 * Prefix of every namespace the benchmarks create: `bn` unless BENCH_NETNS_PREFIX names another
 * (so that runs beside each other on one machine keep apart).
 */
export const BENCH_NETNS_PREFIX = Deno.env.get("BENCH_NETNS_PREFIX") ?? "bn";

const created = new Set<string>();
let exitHooksInstalled = false;

function deleteCreatedSync(): void {
  for (const name of created) {
    new Deno.Command("ip", { args: ["netns", "del", name], stdout: "null", stderr: "null" })
      .outputSync();
  }
  created.clear();
}

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  globalThis.addEventListener("unload", deleteCreatedSync);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    Deno.addSignalListener(signal, () => {
      deleteCreatedSync();
      Deno.exit(130);
    });
  }
}

/**
 * Creates `bn-<suffix>`, after removing leftovers of a crashed run; it is deleted at exit.
 * Throws when not root or when ip/iptables-legacy are missing, so a bench fails loudly.
 */
export async function createBenchNamespace(suffix: string): Promise<string> {
  await requireNetnsSupport();
  requireCommands(["iptables-legacy-restore", "iptables-legacy-save", "iptables-nft-restore"]);
  installExitHooks();
  const name = `${BENCH_NETNS_PREFIX}-${suffix}`;
  if (created.size === 0) await deleteStaleNamespaces(BENCH_NETNS_PREFIX);
  await addNamespaces([name]);
  created.add(name);
  return name;
}

/**
 * `cmd args` run inside namespace `ns` by `nsenter --net`, which only joins the network
 * namespace: lighter per command than `ip netns exec` (which also makes a mount namespace and
 * remounts /sys), so the wrapper weighs less in a sync that runs three commands
 * against a floor that runs one. Neither the program nor upstream runs any wrapper on a node.
 */
export function inNamespace(ns: string, cmd: string, args: readonly string[]): [string, string[]] {
  return ["nsenter", [`--net=/run/netns/${ns}`, cmd, ...args]];
}

/** Runs every command inside namespace `ns` (see inNamespace). */
export function netnsRunner(ns: string, runner: CommandRunner = denoCommandRunner): CommandRunner {
  return (input) => {
    const [cmd, args] = inNamespace(ns, input.cmd, input.args);
    return runner({ ...input, cmd, args });
  };
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The baseline: pipes `payload` straight into `iptables-legacy-restore --noflush --counters -w`. */
export async function rawLegacyRestore(ns: string, payload: string): Promise<void> {
  await rawRestore(ns, payload, "legacy");
}

/** The same baseline with either flavour's `iptables-<flavour>-restore`. */
export async function rawRestore(
  ns: string,
  payload: string,
  flavour: "legacy" | "nft",
): Promise<void> {
  const restore = `iptables-${flavour}-restore`;
  const [cmd, args] = inNamespace(ns, restore, ["--noflush", "--counters", "-w"]);
  const child = new Deno.Command(cmd, { args, stdin: "piped", stdout: "null", stderr: "piped" })
    .spawn();
  const writer = child.stdin.getWriter();
  await writer.write(encoder.encode(payload));
  await writer.close();
  const out = await child.output();
  if (out.code !== 0) {
    throw new Error(
      `Raw ${restore} in "${ns}" exited ${out.code}: ${decoder.decode(out.stderr).trim()}`,
    );
  }
}

/** The same baseline fed from a file (`restore < file`), as upstream's restore reads a buffer. */
export async function rawRestoreFromFile(
  ns: string,
  file: string,
  flavour: "legacy" | "nft",
): Promise<void> {
  const restore = `iptables-${flavour}-restore`;
  const [cmd, args] = inNamespace(ns, restore, ["--noflush", "--counters", "-w"]);
  const input = await Deno.open(file);
  try {
    const child = new Deno.Command(cmd, { args, stdin: "piped", stdout: "null", stderr: "piped" })
      .spawn();
    await input.readable.pipeTo(child.stdin);
    const out = await child.output();
    if (out.code !== 0) {
      throw new Error(
        `Raw ${restore} < ${file} in "${ns}" exited ${out.code}: ${
          decoder.decode(out.stderr).trim()
        }`,
      );
    }
  } finally {
    try {
      input.close();
    } catch {
      // closed by pipeTo
    }
  }
}

/**
 * The floor a full sync cannot go under: the raw restore of `payload` with the two reads a full
 * sync makes (stale chains, missing jumps; upstream reads nat too) running beside it, read to
 * the end: `iptables-legacy-save -t nat` and `-t filter`, or with nft `iptables-nft -t nat -S`
 * and `-t filter -S` (iptables-nft-save would fetch every table for each).
 */
export async function rawRestoreWithReads(
  ns: string,
  payload: string,
  flavour: "legacy" | "nft",
): Promise<void> {
  const read = (table: string) => {
    const [cmd, args] = flavour === "legacy"
      ? inNamespace(ns, "iptables-legacy-save", ["-t", table])
      : inNamespace(ns, "iptables-nft", ["-t", table, "-S"]);
    return new Deno.Command(cmd, { args, stdout: "null", stderr: "null" }).output();
  };
  const reads = [read("nat"), read("filter")];
  await rawRestore(ns, payload, flavour);
  for (const out of await Promise.all(reads)) {
    if (out.code !== 0) {
      throw new Error(`A read of iptables-${flavour} in "${ns}" exited ${out.code}`);
    }
  }
}

/**
 * The input upstream's proxier would send for the same partial sync: `partial` (ours) with the
 * top-level nat chains and the filter table of `full` (a full sync's input) written whole, as
 * upstream does on every sync. Canary and jump lines are left out (a partial sync has none).
 */
export function upstreamPartialPayload(partial: string, full: string): string {
  const top = /^(:|-A )KUBE-(SERVICES|NODEPORTS|POSTROUTING|MARK-MASQ) /;
  const fullLines = full.split("\n");
  const natEnd = fullLines.indexOf("COMMIT");
  const topLevel = fullLines.slice(0, natEnd).filter((l) => top.test(l));
  const declared = [
    ...topLevel.filter((l) => l.startsWith(":")),
    ...topLevel.filter((l) => !l.startsWith(":")),
  ];
  const filterStart = fullLines.indexOf("*filter");
  const filter = fullLines.slice(filterStart, fullLines.indexOf("COMMIT", filterStart) + 1)
    .filter((l) => !l.includes("KUBE-PROXY-CANARY") && !l.startsWith("-I "));
  const lines = partial.split("\n");
  const nat = lines.indexOf("*nat");
  const natCommit = lines.indexOf("COMMIT", nat);
  const ours = lines.slice(nat + 1, natCommit).filter((l) => !top.test(l));
  return [...lines.slice(0, nat + 1), ...declared, ...ours, "COMMIT", ...filter, ""].join("\n");
}

/** Empties the nat, filter and mangle tables inside `ns` (rules and chains), as on a new node. */
export async function emptyTables(ns: string, flavour: "legacy" | "nft"): Promise<void> {
  for (const table of ["nat", "filter", "mangle"]) {
    for (const op of ["-F", "-X"]) {
      const out = await netnsRunner(ns)({ cmd: `iptables-${flavour}`, args: ["-t", table, op] });
      if (out.code !== 0) {
        throw new Error(`iptables-${flavour} -t ${table} ${op} in "${ns}" exited ${out.code}`);
      }
    }
  }
}

/** Number of rules in `chain` of the nat table inside `ns`, to check a sync really landed. */
export async function natRuleCount(ns: string, chain: string): Promise<number> {
  const out = await netnsRunner(ns)({ cmd: "iptables-legacy-save", args: ["-t", "nat"] });
  if (out.code !== 0) {
    throw new Error(`iptables-legacy-save in "${ns}" exited ${out.code}: ${out.stderr.trim()}`);
  }
  return out.stdout.split("\n").filter((l) => l.startsWith(`-A ${chain} `)).length;
}
