/** Public face of lib/trace: the packet and decision vocabulary, the reference model, tracers. */
export * from "./decision.ts";
export * from "./tracer.ts";
export * from "./model_options.ts";
export * from "./model_match.ts";
export * from "./model.ts";
export * from "./explain.ts";
