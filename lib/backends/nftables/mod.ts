/**
 * Public face of lib/backends/nftables: nftables mode (`nftablesMode`, what the registry lists),
 * and for tests and tools elsewhere the renderer, the transaction builders and the proxier.
 */
export { createNftablesMode, nftablesMode, parseNftVersion } from "./mode.ts";
export { createNftablesProxier, type NftablesProxier } from "./proxier.ts";
export { newNftTableStore, renderNftables, updateNftTableStore } from "./render.ts";
export { resolveNftRenderConfig } from "./render_options.ts";
export { type NftChain, type NftHook, type NftSet, type NftTableModel } from "./table_model.ts";
export { nftablesTracer } from "./tracer.ts";
export { fullTransaction, partialTransaction } from "./transaction.ts";
