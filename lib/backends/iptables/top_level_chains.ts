/**
 * The top-level chains of a render (KUBE-SERVICES, KUBE-NODEPORTS, ... and the filter table)
 * by digest, so a partial sync leaves out those equal to what the last restore wrote. Upstream
 * rewrites them on every sync; with legacy iptables KUBE-SERVICES alone is ~12% of a one-
 * endpoint restore at 10,000 services (10,000 rules parsed for nothing).
 */
import { nameHash } from "../common/mod.ts";
import { chainHeader, ruleChain } from "../../netfilter/mod.ts";

/** Characters of base32 SHA-256 kept per digest (160 bits). */
const DIGEST_LENGTH = 32;

/** The chain a `:CHAIN ...` or `-A CHAIN ...` line is about, or null. */
function chainOf(line: string): string | null {
  if (line.startsWith(":")) return chainHeader(line).name;
  return line.startsWith("-A ") ? ruleChain(line) : null;
}

/** The lines of each chain (declaration and rules), in order of first appearance. */
export function linesByChain(lines: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of lines) {
    const chain = chainOf(line);
    if (chain === null) continue;
    let list = out.get(chain);
    if (list === undefined) out.set(chain, list = []);
    list.push(line);
  }
  return out;
}

/** A digest of some lines, equal only for equal lines. */
export function linesDigest(lines: readonly string[]): string {
  return nameHash(lines.join("\n"), DIGEST_LENGTH);
}

/** A digest per chain of `byChain`. */
export function chainDigests(byChain: ReadonlyMap<string, readonly string[]>): Map<string, string> {
  const out = new Map<string, string>();
  for (const [chain, lines] of byChain) out.set(chain, linesDigest(lines));
  return out;
}

/**
 * The lines of the chains whose digest differs from `applied` (a chain missing there counts
 * as changed), declaration first, in the order of `byChain`.
 */
export function changedChainLines(
  byChain: ReadonlyMap<string, readonly string[]>,
  digests: ReadonlyMap<string, string>,
  applied: ReadonlyMap<string, string>,
): string[] {
  const out: string[] = [];
  for (const [chain, lines] of byChain) {
    if (applied.get(chain) !== digests.get(chain)) out.push(...lines);
  }
  return out;
}

/** Digests of a render's top-level nat chains (per chain) and of its filter table. */
export interface TopLevelDigests {
  readonly nat: ReadonlyMap<string, string>;
  readonly filter: string;
}

/** What a sync writes of the top-level chains, and the digests to keep once it applied. */
export interface TopLevelWrite {
  readonly digests: TopLevelDigests;
  /** The top-level nat chains' lines to write in the tail (none for a full sync). */
  readonly changedTopLevelNat: readonly string[];
  /** Whether the filter table is written. */
  readonly writeFilter: boolean;
}

/**
 * A full sync writes every top-level chain with the rest; a partial one only the nat chains
 * and the filter table whose digests differ from `applied` (all, without it).
 */
export function topLevelWrite(
  topLevelNat: readonly string[],
  filterLines: readonly string[],
  applied: TopLevelDigests | undefined,
  full: boolean,
): TopLevelWrite {
  const byChain = linesByChain(topLevelNat);
  const digests = { nat: chainDigests(byChain), filter: linesDigest(filterLines) };
  return {
    digests,
    changedTopLevelNat: full
      ? []
      : changedChainLines(byChain, digests.nat, applied?.nat ?? new Map()),
    writeFilter: full || applied?.filter !== digests.filter,
  };
}
