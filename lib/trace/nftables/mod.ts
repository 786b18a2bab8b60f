/**
 * Public face of lib/trace/nftables: the nftables-mode tracer (read the `kube-proxy` table,
 * or render it for a state, and follow a packet through it).
 */
export { nftablesTracer, readNftTable, traceNftables } from "./tracer.ts";
export { parseNftTableListing } from "./table_text.ts";
export { type NftExpr, parseNftRule } from "./rule_parse.ts";
