/**
 * The rules in built-in chains that lead into ours. They cannot be written with a whole-chain
 * restore (that would replace other software's rules), so they are inserted one by one when
 * missing, as upstream's EnsureRule(Prepend) does.
 */
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_FIREWALL,
  KUBE_FORWARD,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "./chain_names.ts";
import { joinRule, quoted } from "./rule_buffer.ts";
import { ruleComment, ruleTarget, type SavedTable } from "./save_parser.ts";

/** One jump from a built-in chain into one of our chains. */
export interface JumpRule {
  readonly table: "filter" | "nat";
  readonly srcChain: string;
  readonly dstChain: string;
  /** "" for kubelet's own jumps, which carry no comment. */
  readonly comment: string;
  readonly extraArgs: readonly string[];
}

const NEW = ["-m", "conntrack", "--ctstate", "NEW"] as const;

/** Upstream's iptablesJumpChains followed by its copies of kubelet's jumps, in order. */
export const IPTABLES_JUMP_CHAINS: readonly JumpRule[] = [
  j(
    "filter",
    KUBE_EXTERNAL_SERVICES,
    "INPUT",
    "kubernetes externally-visible service portals",
    NEW,
  ),
  j(
    "filter",
    KUBE_EXTERNAL_SERVICES,
    "FORWARD",
    "kubernetes externally-visible service portals",
    NEW,
  ),
  j("filter", KUBE_NODEPORTS, "INPUT", "kubernetes health check service ports", []),
  j("filter", KUBE_SERVICES, "FORWARD", "kubernetes service portals", NEW),
  j("filter", KUBE_SERVICES, "OUTPUT", "kubernetes service portals", NEW),
  j("filter", KUBE_FORWARD, "FORWARD", "kubernetes forwarding rules", []),
  j("filter", KUBE_PROXY_FIREWALL, "INPUT", "kubernetes load balancer firewall", NEW),
  j("filter", KUBE_PROXY_FIREWALL, "OUTPUT", "kubernetes load balancer firewall", NEW),
  j("filter", KUBE_PROXY_FIREWALL, "FORWARD", "kubernetes load balancer firewall", NEW),
  j("nat", KUBE_SERVICES, "OUTPUT", "kubernetes service portals", []),
  j("nat", KUBE_SERVICES, "PREROUTING", "kubernetes service portals", []),
  j("nat", KUBE_POSTROUTING, "POSTROUTING", "kubernetes postrouting rules", []),
  j("filter", KUBE_FIREWALL, "INPUT", "", []),
  j("filter", KUBE_FIREWALL, "OUTPUT", "", []),
];

function j(
  table: "filter" | "nat",
  dstChain: string,
  srcChain: string,
  comment: string,
  extraArgs: readonly string[],
): JumpRule {
  return { table, srcChain, dstChain, comment, extraArgs };
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

/** The jumps of `tableName` that `table` lacks (all of them when the table is unknown). */
export function missingJumps(
  tableName: "filter" | "nat",
  table: SavedTable | undefined,
): JumpRule[] {
  return IPTABLES_JUMP_CHAINS.filter((r) => r.table === tableName && !hasJump(table, r));
}
