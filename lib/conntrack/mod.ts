/** Public face of lib/conntrack: the stale-flow reconciler and conntrack tuning at start. */
export { parseConntrackList } from "./conntrack_entry.ts";
export { type ConntrackReconciler, createConntrackReconciler } from "./reconciler.ts";
export { conntrackKnobs, tuneConntrack } from "./tuning.ts";
