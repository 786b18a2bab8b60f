/** Public face of lib/proxy: the data model, change trackers and endpoint selection. */
export * from "./types.ts";
