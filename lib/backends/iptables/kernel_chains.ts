/**
 * What one table holds, chain by chain, as digests of the rules iptables prints (iptables-save
 * or `iptables -S` text, fed a line at a time while it streams). At a restart the first sync
 * compares them with the canonical form of what it renders (lib/netfilter's canonicalRule) and
 * leaves alone every chain the kernel already holds as rendered: with iptables-nft rewriting a
 * chain costs far more than reading it.
 */
import type { IPFamily } from "../../proxy/mod.ts";
import { KUBE_SERVICES } from "./chain_names.ts";
import { canonicalRule, chainHeader, ruleChain } from "../../netfilter/mod.ts";
import { linesByChain, linesDigest } from "./top_level_chains.ts";

/**
 * What one table holds: one digest per chain of its name and rules together, so no chain name
 * is kept (a Set of digests holds about half what a Map of names to digests would through the
 * first sync).
 */
export interface KernelChains {
  /** chainDigest() of every chain, empty ones too. */
  readonly digests: ReadonlySet<string>;
  /** Whether the table declares KUBE-SERVICES (a previous run left its rules). */
  readonly declaresServices: boolean;
}

/** Takes a table's listing a line at a time; `done()` gives the digests. */
export interface KernelChainsCollector {
  line(line: string): void;
  done(): KernelChains;
}

/** The digest of one chain: its name and its rules (none for an empty chain), in order. */
export function chainDigest(name: string, rules: readonly string[]): string {
  return linesDigest([name, ...rules]);
}

/** Chain names from `:NAME ...` (iptables-save) and `-P NAME ...` / `-N NAME` (iptables -S). */
function declaredChain(line: string): string | undefined {
  if (line.startsWith(":")) return chainHeader(line).name;
  if (line.startsWith("-N ") || line.startsWith("-P ")) return line.slice(3).split(" ")[0];
  return undefined;
}

/**
 * Collects digests while a listing streams; only one chain's rules are held at a time (both
 * formats print each chain's rules together, after every header). The names of declared chains
 * with no rule yet are held until the end, when those left are the empty chains.
 */
export function collectKernelChains(): KernelChainsCollector {
  const digests = new Set<string>();
  const ruleless = new Set<string>();
  let declaresServices = false;
  let chain: string | undefined;
  let rules: string[] = [];
  const flush = () => {
    if (chain !== undefined) {
      digests.add(chainDigest(chain, rules));
      ruleless.delete(chain);
    }
    chain = undefined;
    rules = [];
  };
  return {
    line(line) {
      const declared = declaredChain(line);
      if (declared !== undefined) {
        if (declared === KUBE_SERVICES) declaresServices = true;
        ruleless.add(declared);
        return;
      }
      if (!line.startsWith("-A ")) return;
      const of = ruleChain(line);
      if (of !== chain) flush();
      chain = of;
      rules.push(line.trimEnd());
    },
    done() {
      flush();
      for (const name of ruleless) digests.add(chainDigest(name, []));
      ruleless.clear();
      return { digests, declaresServices };
    },
  };
}

/**
 * Whether the kernel holds each of these rendered chains exactly as rendered: declared
 * (`:NAME - [0:0]`) and rule (`-A NAME ...`) lines of one owner. False as soon as one chain is
 * missing, differs, or has a rule canonicalRule cannot print.
 */
export function heldAsRendered(
  lines: readonly string[],
  kernel: KernelChains,
  family: IPFamily,
): boolean {
  for (const [name, chainLines] of linesByChain(lines)) {
    const rules: string[] = [];
    for (const line of chainLines) {
      if (line.startsWith(":")) continue;
      const canonical = canonicalRule(line, family);
      if (canonical === undefined) return false;
      rules.push(canonical);
    }
    if (!kernel.digests.has(chainDigest(name, rules))) return false;
  }
  return true;
}
