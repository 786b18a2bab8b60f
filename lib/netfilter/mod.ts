/**
 * Public face of lib/netfilter: the one iptables toolkit every mode and tracer uses. It reads
 * iptables-save output and restore input, splits rules into words, prints rules as iptables
 * prints them back, builds restore lines and the chains iptables and IPVS mode share, and
 * walks a packet through the rules.
 */
export { canonicalRule } from "./_canonical_rule.ts";
export {
  type CompiledRule,
  compileRule,
  type Match,
  type Target,
  UnknownMatchError,
} from "./_compile.ts";
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
export {
  BUILTIN_CHAINS,
  chainRules,
  type IptablesRule,
  type IptablesRules,
  type IptablesTable,
  parseIptablesRules,
} from "./_rule_set.ts";
export {
  afterBuiltinRules,
  chainHeader,
  parseIptablesSave,
  type RestoreLine,
  restoreLines,
  ruleChain,
  type SavedChain,
  type SavedRule,
  type SavedTable,
  scanSavedTable,
} from "./_save_parser.ts";
export { ruleComment, ruleTarget, ruleWords, unquoteWord, wordText } from "./_tokenize.ts";
export {
  IPTABLES_MODE_MODULES,
  IPVS_MODE_MODULES,
  newConnection,
  walkChain,
  type WalkContext,
  type WalkPacket,
  walkStart,
  type WalkState,
  type WalkVirtualServer,
} from "./_walk.ts";
