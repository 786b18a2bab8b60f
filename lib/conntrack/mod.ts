/** Public face of lib/conntrack: the stale-flow reconciler and conntrack tuning at start. */
export * from "./conntrack_entry.ts";
export * from "./reconciler.ts";
export * from "./stale_entries.ts";
export * from "./tuning.ts";
