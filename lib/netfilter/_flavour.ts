/**
 * iptables comes in two flavours (legacy x_tables and nf_tables); a node's rules live in one
 * of them, and we must use the same one as kubelet. Detection follows
 * kubernetes-sigs/iptables-wrappers.
 */
import { COMMAND_NOT_FOUND, type CommandRunner, denoCommandRunner } from "../exec/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";

/** Which iptables backend the binaries talk to. */
export type IptablesFlavour = "legacy" | "nft";

/** The three binaries of one family and flavour. */
export interface IptablesBinaries {
  /** e.g. `iptables-nft`: single-rule commands (-S, -N, ...). */
  readonly iptables: string;
  readonly save: string;
  readonly restore: string;
}

/** Binary names for a family and flavour, e.g. `ip6tables-legacy-restore`. */
export function iptablesBinaries(family: IPFamily, flavour: IptablesFlavour): IptablesBinaries {
  const base = `${family === "IPv6" ? "ip6tables" : "iptables"}-${flavour}`;
  return { iptables: base, save: `${base}-save`, restore: `${base}-restore` };
}

/** Wait for the xtables lock up to 5 s, polling every 100 ms, as upstream's restore does. */
export const IPTABLES_WAIT_ARGS: readonly string[] = ["-w", "5", "-W", "100000"];

/** Arguments of every restore we run: keep other software's chains, keep counters. */
export const RESTORE_ARGS: readonly string[] = [...IPTABLES_WAIT_ARGS, "--noflush", "--counters"];

/** kubelet's hint chains, declared in iptables-save (`:NAME`) or `iptables -S` (`-N NAME`) text. */
const KUBELET_HINT = /^(?::|-N )(KUBE-IPTABLES-HINT|KUBE-KUBELET-CANARY)\b/m;
const FAMILIES: readonly IPFamily[] = ["IPv4", "IPv6"];

interface SaveOutputs {
  /** Concatenated stdout of the saves that ran. */
  readonly text: string;
  /** At least one binary of the flavour exists. */
  readonly available: boolean;
}

/** What both families' whole saves of a flavour hold, as far as detection reads them. */
interface SavesScan {
  /** A kubelet hint line was seen (reading stopped there, if asked). */
  readonly hint: boolean;
  /** Rule lines read (all of them when no hint stopped the reading). */
  readonly rules: number;
  /** At least one binary of the flavour exists. */
  readonly available: boolean;
}

/**
 * Reads both families' whole save of a flavour as a stream: only hint lines are kept, rule
 * lines are counted as they pass, and with `untilHint` reading stops at the first hint. The
 * whole save, not `-t mangle`: `-t` of a missing legacy table makes the kernel create it, and
 * the list of tables (/proc/self/net/ip_tables_names) is closed to the program (Deno asks
 * --allow-all for any read under /proc). At a restart the legacy save holds the previous run's
 * nat table, often before mangle (newest first), none of which is kept.
 */
async function scanSaves(
  runner: CommandRunner,
  flavour: IptablesFlavour,
  untilHint: boolean,
): Promise<SavesScan> {
  const isHint = (line: string) => KUBELET_HINT.test(line);
  let rules = 0;
  let available = false;
  for (const family of FAMILIES) {
    let counted = 0;
    const out = await runner({
      cmd: iptablesBinaries(family, flavour).save,
      args: [],
      stdoutKeep: (line) => {
        if (line.startsWith("-")) counted++;
        return isHint(line);
      },
      ...(untilHint ? { stdoutUntil: isHint } : {}),
    });
    if (out.code === COMMAND_NOT_FOUND) continue;
    available = true;
    if (untilHint && KUBELET_HINT.test(out.stdout)) return { hint: true, rules, available };
    // A runner that ignores stdoutKeep returns the lines instead of showing them one by one.
    rules += counted + countRules(out.stdout);
  }
  return { hint: false, rules, available };
}

/**
 * nft's mangle table of both families, listed with `iptables -t mangle -S`: that fetches the
 * mangle table only, where iptables-nft-save fetches every table first (slow with a large
 * nat table).
 */
async function nftMangle(runner: CommandRunner): Promise<SaveOutputs> {
  let text = "";
  let available = false;
  for (const family of FAMILIES) {
    const cmd = iptablesBinaries(family, "nft").iptables;
    const out = await runner({ cmd, args: ["-t", "mangle", "-S"] });
    if (out.code === COMMAND_NOT_FOUND) continue;
    available = true;
    text += out.stdout;
  }
  return { text, available };
}

function countRules(text: string): number {
  return text.split("\n").filter((l) => l.startsWith("-")).length;
}

/**
 * Picks the flavour the node uses: kubelet's hint chains in nft's mangle table, then in
 * legacy's tables, then whichever holds more rules; a tie means nft. A flavour whose binaries
 * are missing is never picked over one that exists.
 */
export async function detectIptablesFlavour(
  runner: CommandRunner = denoCommandRunner,
): Promise<IptablesFlavour> {
  if (KUBELET_HINT.test((await nftMangle(runner)).text)) return "nft";
  // Without a hint, the legacy saves were read whole: their count is complete.
  const legacy = await scanSaves(runner, "legacy", true);
  if (legacy.hint) return "legacy";
  const nft = await scanSaves(runner, "nft", false);
  if (!nft.available && legacy.available) return "legacy";
  if (!legacy.available) return "nft";
  return legacy.rules > nft.rules ? "legacy" : "nft";
}

/**
 * Whether the nat table of a family and flavour can be read here, reading as little as
 * possible: legacy's `iptables-save -t nat` up to its first line (the fetch is of nat only);
 * with nft, `iptables -t nat -S POSTROUTING`, which fetches that one chain, where
 * iptables-nft-save fetches every table first (slow with a large nat table).
 */
export async function natReadable(
  runner: CommandRunner,
  family: IPFamily,
  flavour: IptablesFlavour,
): Promise<{ ok: boolean; stderr: string }> {
  const bins = iptablesBinaries(family, flavour);
  const out = flavour === "nft"
    ? await runner({ cmd: bins.iptables, args: ["-t", "nat", "-S", "POSTROUTING"] })
    : await runner({ cmd: bins.save, args: ["-t", "nat"], stdoutUntil: () => true });
  return { ok: out.code === 0, stderr: out.stderr };
}

/** The families to proxy: IPv4 always, IPv6 when ip6tables works on this node. */
export async function usableFamilies(
  runner: CommandRunner,
  flavour: IptablesFlavour,
): Promise<IPFamily[]> {
  return (await natReadable(runner, "IPv6", flavour)).ok ? ["IPv4", "IPv6"] : ["IPv4"];
}
