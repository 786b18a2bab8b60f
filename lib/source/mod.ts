/** Public face of lib/source: source events and the manifest-file source. */
export * from "./events.ts";
export * from "./manifest_parse.ts";
export * from "./manifest_state.ts";
export * from "./manifest_source.ts";
export * from "./early_start.ts";
