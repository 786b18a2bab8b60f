/**
 * Public face of lib/netfilter: the one iptables toolkit every mode and tracer uses. It reads
 * iptables-save output and restore input, splits rules into words, prints rules as iptables
 * prints them back, builds restore lines and the chains iptables and IPVS mode share, and
 * walks a packet through the rules.
 */
export { canonicalRule } from "./_canonical_rule.ts";
export { IPTABLES_MODE_MODULES, IPVS_MODE_MODULES, UnknownMatchError } from "./_compile.ts";
export { hasJump, jumpInsertLine, jumpMatches, type JumpRule } from "./_jump_rule.ts";
export {
  chainLine,
  joinRule,
  kubeForwardAcceptRules,
  kubeMarkMasqRule,
  kubePostroutingRules,
  quoted,
  type RulePart,
} from "./_rule_builder.ts";
export { type IptablesRules, parseIptablesRules } from "./_rule_set.ts";
export {
  afterBuiltinRules,
  chainHeader,
  parseIptablesSave,
  ruleChain,
  type SavedTable,
  scanSavedTable,
} from "./_save_parser.ts";
export { ruleTarget } from "./_tokenize.ts";
export {
  newConnection,
  walkChain,
  type WalkContext,
  type WalkPacket,
  walkStart,
  type WalkState,
} from "./_walk.ts";
