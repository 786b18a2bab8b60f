/**
 * iptables comes in two flavours (legacy x_tables and nf_tables); a node's rules live in one
 * of them, and we must use the same one as kubelet. Detection follows
 * kubernetes-sigs/iptables-wrappers.
 */
import { COMMAND_NOT_FOUND, type CommandRunner, denoCommandRunner } from "../../exec/mod.ts";
import type { IPFamily } from "../../proxy/mod.ts";

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

/** Rule lines in both families' whole save of a flavour, counted as read, none of them kept. */
async function countAllRules(
  runner: CommandRunner,
  flavour: IptablesFlavour,
): Promise<{ rules: number; available: boolean }> {
  let rules = 0;
  let available = false;
  for (const family of FAMILIES) {
    let counted = 0;
    const out = await runner({
      cmd: iptablesBinaries(family, flavour).save,
      args: [],
      stdoutKeep: (line) => {
        if (line.startsWith("-")) counted++;
        return false;
      },
    });
    if (out.code === COMMAND_NOT_FOUND) continue;
    available = true;
    // A runner that ignores stdoutKeep returns the lines instead of showing them one by one.
    rules += counted + countRules(out.stdout);
  }
  return { rules, available };
}

/**
 * nft's mangle table of both families, listed with `iptables -t mangle -S`: that fetches the
 * mangle table only, where iptables-nft-save fetches every table first (~0.3 s with 1,000
 * services x 10 endpoints in nat).
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

/**
 * Whether kubelet's hint chains are in a legacy table. The whole save is read, as
 * iptables-wrappers does: `-t mangle` of a missing table makes the kernel create it, and the
 * list of tables (/proc/self/net/ip_tables_names) is closed to the program (Deno asks
 * --allow-all for any read under /proc). Only a hint line is kept, and reading stops there: at a
 * restart the save holds the previous run's nat table, often before mangle (newest first).
 */
async function legacyHint(runner: CommandRunner): Promise<boolean> {
  const hint = (line: string) => KUBELET_HINT.test(line);
  for (const family of FAMILIES) {
    const save = iptablesBinaries(family, "legacy").save;
    const out = await runner({ cmd: save, args: [], stdoutKeep: hint, stdoutUntil: hint });
    if (KUBELET_HINT.test(out.stdout)) return true;
  }
  return false;
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
  if (await legacyHint(runner)) return "legacy";
  const legacy = await countAllRules(runner, "legacy");
  const nft = await countAllRules(runner, "nft");
  if (!nft.available && legacy.available) return "legacy";
  if (!legacy.available) return "nft";
  return legacy.rules > nft.rules ? "legacy" : "nft";
}
