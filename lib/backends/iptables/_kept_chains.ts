/**
 * The first sync's diff against what a previous run left in the kernel: which service ports'
 * chains and which top-level nat chains it already holds as this run renders them, so they are
 * left in place instead of rewritten (rewriting them costs far more than reading them).
 */
import type { IPFamily } from "../../proxy/mod.ts";
import { heldAsRendered, type KernelChains } from "./kernel_chains.ts";
import type { OwnedLine } from "./rule_buffer.ts";
import { linesByChain } from "./top_level_chains.ts";

/** What a previous run left as rendered; asked of each rendered slice and of the top level. */
export interface KeptChains {
  /** Adds to `include` the owners in `lines` whose chains the kernel lacks or differ. */
  slice(lines: readonly OwnedLine[], include: Set<string>): void;
  /** The lines of the top-level nat chains the kernel does not hold as rendered. */
  topLevel(topLevelNat: readonly string[]): string[];
}

/**
 * The diff against the kernel's nat chains (see kernel_chains.ts). Only once a previous run's
 * KUBE-SERVICES is there; on a new node (undefined) everything is written.
 */
export function keptFromBefore(
  kernel: KernelChains | undefined,
  family: IPFamily,
): KeptChains | undefined {
  if (kernel === undefined || !kernel.declaresServices) return undefined;
  const held = (lines: readonly string[]) => heldAsRendered(lines, kernel, family);
  return {
    slice(lines, include) {
      const byOwner = new Map<string, string[]>();
      for (const line of lines) {
        if (line.owner === null) continue;
        let list = byOwner.get(line.owner);
        if (list === undefined) byOwner.set(line.owner, list = []);
        list.push(line.text);
      }
      for (const [owner, own] of byOwner) if (!held(own)) include.add(owner);
    },
    topLevel(topLevelNat) {
      const out: string[] = [];
      for (const chainLines of linesByChain(topLevelNat).values()) {
        if (!held(chainLines)) out.push(...chainLines);
      }
      return out;
    },
  };
}
