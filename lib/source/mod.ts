/** Public face of lib/source: source events and the manifest-file source. */
export * from "./events.ts";
