/**
 * Public face of lib/backends/nftables: the pure renderer (ProxyState → table model), the
 * transaction builder (model → `nft -f -` script), and `--cleanup` of the `kube-proxy` tables.
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
