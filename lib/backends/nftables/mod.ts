/**
 * Public face of lib/backends/nftables: the pure renderer (ProxyState → table model or table
 * store), the transaction builders (full, model diff, store changes → `nft -f -` script), the
 * proxier that applies them, and `--cleanup` of the `kube-proxy` tables.
 */
export * from "./cleanup.ts";
export * from "./table_model.ts";
export * from "./names.ts";
export * from "./render_options.ts";
export * from "./render.ts";
export * from "./transaction.ts";
export * from "./table_objects.ts";
export * from "./table_store.ts";
export * from "./proxier.ts";
export * from "./table_stamp.ts";
export * from "./mode.ts";
export * from "./metrics.ts";
export * from "./tracer.ts";
export { parseNftTableListing } from "./trace_table_text.ts";
export { type NftExpr, parseNftRule } from "./trace_rule_parse.ts";
