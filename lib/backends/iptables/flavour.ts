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

/**
 * The legacy (x_tables) tables that exist in this network namespace, for one family; [] when
 * x_tables is not loaded, undefined when that cannot be told.
 */
export type LegacyTableLister = (family: IPFamily) => Promise<readonly string[] | undefined>;

/** Reads /proc/self/net/ip_tables_names (ip6_tables_names for IPv6), as the kernel lists them. */
export const procLegacyTables: LegacyTableLister = async (family) => {
  const file = `/proc/self/net/${family === "IPv6" ? "ip6" : "ip"}_tables_names`;
  try {
    return (await Deno.readTextFile(file)).split("\n").filter((name) => name !== "");
  } catch (err) {
    return err instanceof Deno.errors.NotFound ? [] : undefined;
  }
};

interface SaveOutputs {
  /** Concatenated stdout of the saves that ran. */
  readonly text: string;
  /** At least one binary of the flavour exists. */
  readonly available: boolean;
}

async function saveAll(
  runner: CommandRunner,
  flavour: IptablesFlavour,
  args: readonly string[],
): Promise<SaveOutputs> {
  let text = "";
  let available = false;
  for (const family of FAMILIES) {
    const out = await runner({ cmd: iptablesBinaries(family, flavour).save, args });
    if (out.code === COMMAND_NOT_FOUND) continue;
    available = true;
    text += out.stdout;
  }
  return { text, available };
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

/** Stops an iptables-save of one table after its chain headers. */
const afterHeaders = (line: string) => line.startsWith("-") || line === "COMMIT";

/**
 * Whether kubelet's hint chains are in a legacy table. Only tables that exist are read (`-t` of
 * a missing one makes the kernel create it), mangle first, and only their chain headers: on a
 * node with legacy rules the full save would copy the whole nat table into the program.
 * Where the tables cannot be listed, the whole save is read, as iptables-wrappers does.
 */
async function legacyHint(runner: CommandRunner, listTables: LegacyTableLister): Promise<boolean> {
  for (const family of FAMILIES) {
    const save = iptablesBinaries(family, "legacy").save;
    const tables = await listTables(family);
    if (tables === undefined) {
      if (KUBELET_HINT.test((await runner({ cmd: save, args: [] })).stdout)) return true;
      continue;
    }
    const ordered = [...tables].sort((a, b) => Number(b === "mangle") - Number(a === "mangle"));
    for (const table of ordered) {
      const out = await runner({ cmd: save, args: ["-t", table], stdoutUntil: afterHeaders });
      if (KUBELET_HINT.test(out.stdout)) return true;
    }
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
  listLegacyTables: LegacyTableLister = procLegacyTables,
): Promise<IptablesFlavour> {
  if (KUBELET_HINT.test((await nftMangle(runner)).text)) return "nft";
  if (await legacyHint(runner, listLegacyTables)) return "legacy";
  const legacy = await saveAll(runner, "legacy", []);
  const nft = await saveAll(runner, "nft", []);
  if (!nft.available && legacy.available) return "legacy";
  if (!legacy.available) return "nft";
  return countRules(legacy.text) > countRules(nft.text) ? "legacy" : "nft";
}
