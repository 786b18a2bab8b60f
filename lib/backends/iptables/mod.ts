/**
 * Public face of lib/backends/iptables: iptables mode (`iptablesMode`, what the registry lists),
 * what IPVS mode shares of it (flavour and local-traffic detection, the iptables checks), and
 * for tests and tools elsewhere the renderer, the proxier and cleanup.
 */
export { ChainNameCache } from "./chain_name_cache.ts";
export {
  cleanupIptables,
  computeCleanupPayload,
  IPTABLES_MODE_CHAINS,
  isCleanupChain,
  type KeptIptablesState,
  KUBELET_OWNED_CHAINS,
} from "./cleanup.ts";
export {
  detectIptablesFlavour,
  type IptablesBinaries,
  iptablesBinaries,
  type IptablesFlavour,
  RESTORE_ARGS,
} from "./flavour.ts";
export { IPTABLES_JUMP_CHAINS } from "./jump_chains.ts";
export { type DetectLocalMode, localTrafficDetector } from "./local_detector.ts";
export { NFACCT_METRICS } from "./metrics.ts";
export { iptablesMode, requireIptables, usableFamilies } from "./mode.ts";
export { NFACCT_COUNTERS } from "./nfacct.ts";
export { createIptablesProxier } from "./proxier.ts";
export { type IptablesRenderOptions, iptablesRenderOptions } from "./render_options.ts";
export { renderFullRestore } from "./restore_payload.ts";
export { iptablesTracer } from "./tracer.ts";
