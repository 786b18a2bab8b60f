/**
 * Public face of lib/netfilter: the one iptables toolkit every mode and tracer uses. It finds
 * the iptables flavour and binaries the node uses, reads iptables-save output and restore
 * input, splits rules into words, prints rules as iptables prints them back, builds restore
 * lines, the chains iptables and IPVS mode share and the local-traffic matches both write,
 * knows which chains are kube-proxy's (and removes them), and walks a packet through the rules.
 */
export { canonicalRule } from "./_canonical_rule.ts";
export { cleanupIptables, type KeptIptablesState } from "./_cleanup.ts";
export { IPTABLES_MODE_MODULES, IPVS_MODE_MODULES, UnknownMatchError } from "./_compile.ts";
export {
  detectIptablesFlavour,
  IPTABLES_WAIT_ARGS,
  type IptablesBinaries,
  iptablesBinaries,
  type IptablesFlavour,
  natReadable,
  RESTORE_ARGS,
  usableFamilies,
} from "./_flavour.ts";
export { hasJump, jumpInsertLine, jumpMatches, type JumpRule } from "./_jump_rule.ts";
export {
  IPTABLES_JUMP_CHAINS,
  IPTABLES_MODE_CHAINS,
  isCleanupChain,
  KUBELET_OWNED_CHAINS,
} from "./_kube_chains.ts";
export {
  type DetectLocalMode,
  type LocalDetectOptions,
  localDetectorFor,
  localTrafficDetector,
} from "./_local_detector.ts";
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
