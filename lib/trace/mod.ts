/** Public face of lib/trace: the packet and decision vocabulary, the reference model, tracers. */
export {
  type TraceDecision,
  type TraceDropReason,
  type TraceEndpoint,
  type TracePacket,
  type TraceProtocol,
  type TraceResult,
  type TraceSource,
} from "./decision.ts";
export { decisionsAgree, describeDecision, differences } from "./explain.ts";
export { modelDecision } from "./model.ts";
export { inCIDR, type ModelOptions, modelOptions } from "./model_options.ts";
export { type ModeTracer, type TraceNode } from "./tracer.ts";
