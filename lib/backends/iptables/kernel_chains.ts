/**
 * What one table holds, chain by chain, as digests of the rules iptables prints (iptables-save
 * or `iptables -S` text, fed a line at a time while it streams). At a restart the first sync
 * compares them with the canonical form of what it renders (see canonical_rule.ts) and leaves
 * alone every chain the kernel already holds as rendered: with iptables-nft rewriting a chain
 * costs far more than reading it.
 */
import type { IPFamily } from "../../proxy/mod.ts";
import { canonicalRule } from "./canonical_rule.ts";
import { chainHeader, ruleChain } from "./save_parser.ts";
import { linesByChain, linesDigest } from "./top_level_chains.ts";

/** Digest of each chain's rules (of no rules, for an empty chain), by chain name. */
export type KernelChains = ReadonlyMap<string, string>;

/** Takes a table's listing a line at a time; `done()` gives the digests. */
export interface KernelChainsCollector {
  line(line: string): void;
  done(): KernelChains;
}

/**
 * `name` in storage of its own: a name sliced from a streamed line shares (and keeps alive) the
 * whole piece of output it was cut from, ~64 KB per piece.
 */
function ownCopy(name: string): string {
  return (name + " ").slice(0, -1);
}

/** Chain names from `:NAME ...` (iptables-save) and `-P NAME ...` / `-N NAME` (iptables -S). */
function declaredChain(line: string): string | undefined {
  if (line.startsWith(":")) return chainHeader(line).name;
  if (line.startsWith("-N ") || line.startsWith("-P ")) return line.slice(3).split(" ")[0];
  return undefined;
}

/**
 * Collects digests while a listing streams; only one chain's rules are held at a time (both
 * formats print each chain's rules together, after every header).
 */
export function collectKernelChains(): KernelChainsCollector {
  const digests = new Map<string, string>();
  const empty = linesDigest([]);
  let chain: string | undefined;
  let rules: string[] = [];
  const flush = () => {
    if (chain !== undefined) digests.set(ownCopy(chain), linesDigest(rules));
    chain = undefined;
    rules = [];
  };
  return {
    line(line) {
      const declared = declaredChain(line);
      if (declared !== undefined) {
        if (!digests.has(declared)) digests.set(ownCopy(declared), empty);
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
      return digests;
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
    if (!kernel.has(name)) return false;
    const rules: string[] = [];
    for (const line of chainLines) {
      if (line.startsWith(":")) continue;
      const canonical = canonicalRule(line, family);
      if (canonical === undefined) return false;
      rules.push(canonical);
    }
    if (kernel.get(name) !== linesDigest(rules)) return false;
  }
  return true;
}
