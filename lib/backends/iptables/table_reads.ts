/**
 * The reads of nat and filter a full sync makes: stale service chains, missing jumps, kubelet's
 * KUBE-FIREWALL and, for the first sync of a process, a digest of every nat chain the kernel
 * holds (see kernel_chains.ts).
 */
import { CommandError, type CommandRunner } from "../../exec/mod.ts";
import { isServiceChainName, KUBE_FIREWALL } from "./chain_names.ts";
import { missingJumps } from "./jump_chains.ts";
import { collectKernelChains, type KernelChains } from "./kernel_chains.ts";
import type { RestoreTail } from "./restore_payload.ts";
import {
  afterBuiltinRules,
  IPTABLES_WAIT_ARGS,
  type IptablesBinaries,
  type IptablesFlavour,
  scanSavedTable,
} from "../../netfilter/mod.ts";

/** One table as read: iptables-save text, or the `-S` listing of `listedTable`. */
interface TableText {
  readonly text: string;
  readonly listedTable: string | undefined;
}

/** What a full sync learns from reading the tables. */
export type TableFindings = Pick<
  RestoreTail,
  "staleNatChains" | "jumps" | "declareKubeletFirewall"
>;

/** Reads of nat and filter under way. */
export interface TableReads {
  readonly nat: Promise<TableText>;
  readonly filter: Promise<TableText>;
  /** Every nat chain's digest, when the read was asked to collect them. */
  readonly natChains: Promise<KernelChains> | undefined;
}

/** Starts and interprets the table reads of one family and flavour. */
export interface TableReader {
  /** Starts reading nat and filter; with `kernelChains`, nat is read whole, digested as it streams. */
  read(kernelChains?: boolean): TableReads;
  /** What the reads say about the tables, given the service chains the render uses. */
  findings(reads: TableReads, active: ReadonlySet<string>): Promise<TableFindings>;
}

/** The reads through `runner` with the binaries of one family and flavour. */
export function createTableReader(
  runner: CommandRunner,
  flavour: IptablesFlavour,
  bins: IptablesBinaries,
): TableReader {
  /**
   * Reads one table as far as a full sync uses it: the headers and the built-in chains' rules.
   * iptables-nft-save fetches every table whatever `-t` names (slow even for the small filter
   * table), so with nft the one table is listed with `-S`, which fetches only it; legacy's
   * save fetches only the table named and, unlike `iptables-legacy -S`, takes no xtables lock.
   * With `collect`, the rest is read too and every line goes through it; none is kept.
   */
  const save = async (
    table: string,
    collect?: (line: string) => void,
  ): Promise<TableText> => {
    const listed = flavour === "nft";
    const cmd = listed ? bins.iptables : bins.save;
    const args = listed ? [...IPTABLES_WAIT_ARGS.slice(0, 2), "-t", table, "-S"] : ["-t", table];
    const stop = afterBuiltinRules();
    let fed = 0;
    let cut = false;
    const out = collect === undefined
      ? await runner({ cmd, args, stdoutUntil: stop })
      : await runner({
        cmd,
        args,
        stdoutKeep: (line) => {
          fed++;
          collect(line);
          if (cut) return false;
          cut = stop(line);
          return true;
        },
      });
    if (out.code !== 0) throw new CommandError(cmd, args, out.code, out.stderr);
    let text = out.stdout;
    if (collect !== undefined && fed === 0) {
      // A runner that ignores stdoutKeep hands over every line at the end instead.
      const lines = text.split("\n");
      for (const line of lines) collect(line);
      const end = lines.findIndex(stop);
      text = end === -1 ? text : lines.slice(0, end + 1).join("\n") + "\n";
    }
    return { text, listedTable: listed ? table : undefined };
  };

  const read = (kernelChains = false): TableReads => {
    const collector = kernelChains ? collectKernelChains() : undefined;
    const nat = save("nat", collector?.line);
    const filter = save("filter");
    const natChains = collector && nat.then(() => collector.done());
    // Awaited later; a failure there must not also surface as an unhandled rejection.
    for (const p of [nat, filter, natChains]) p?.catch(() => {});
    return { nat, filter, natChains };
  };

  const findings = async (reads: TableReads, active: ReadonlySet<string>) => {
    // Only stale service chains and KUBE-FIREWALL are kept of the user chains declared.
    const scan = ({ text, listedTable }: TableText, keep: (chain: string) => boolean) =>
      scanSavedTable(text, keep, listedTable);
    const nat = scan(await reads.nat, (c) => isServiceChainName(c) && !active.has(c));
    const filter = scan(await reads.filter, (c) => c === KUBE_FIREWALL);
    const stale = [...(nat?.chains.values() ?? [])].filter((c) => !c.builtin).map((c) => c.name)
      .sort();
    return {
      staleNatChains: stale,
      jumps: [...missingJumps("filter", filter), ...missingJumps("nat", nat)],
      declareKubeletFirewall: !(filter?.chains.has(KUBE_FIREWALL) ?? false),
    };
  };

  return { read, findings };
}
