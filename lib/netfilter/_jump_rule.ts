/**
 * Jumps from built-in chains into kube-proxy's chains. They cannot be written with a
 * whole-chain restore (that would replace other software's rules), so they are inserted one
 * by one when missing, as upstream's EnsureRule(Prepend) does. Pure.
 */
import { joinRule, quoted } from "./_rule_builder.ts";
import type { SavedTable } from "./_save_parser.ts";
import { ruleComment, ruleTarget } from "./_tokenize.ts";

/** One jump from a built-in chain into one of our chains. */
export interface JumpRule {
  readonly table: "filter" | "nat";
  readonly srcChain: string;
  readonly dstChain: string;
  /** "" for kubelet's own jumps, which carry no comment. */
  readonly comment: string;
  readonly extraArgs: readonly string[];
}

/** The `-I` restore line that prepends a jump (position 1, like `iptables -I`). */
export function jumpInsertLine(rule: JumpRule): string {
  const comment = rule.comment === "" ? [] : ["-m", "comment", "--comment", quoted(rule.comment)];
  return joinRule(["-I", rule.srcChain, rule.extraArgs, comment, "-j", rule.dstChain]);
}

/** True when the saved rule `saved`, which jumps to `target`, is the jump `rule`. */
export function jumpMatches(
  saved: { readonly chain: string; readonly spec: string },
  target: string | null,
  rule: JumpRule,
): boolean {
  return saved.chain === rule.srcChain && target === rule.dstChain &&
    (rule.comment === "" || ruleComment(saved.spec) === rule.comment);
}

/** True when `table` (from iptables-save) already holds this jump. */
export function hasJump(table: SavedTable | undefined, rule: JumpRule): boolean {
  if (table === undefined) return false;
  return table.rules.some((r) => jumpMatches(r, ruleTarget(r.spec), rule));
}
