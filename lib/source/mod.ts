/** Public face of lib/source: source events and the manifest-file source. */
export { type EarlySource, startEarly } from "./early_start.ts";
export {
  type EventType,
  HEADLESS_LABEL,
  type ObjectEvent,
  type ObjectKind,
  type ObjectSink,
  type ObjectSource,
  selectedByProxyLabels,
  SERVICE_PROXY_NAME_LABEL,
} from "./events.ts";
export { createManifestSource } from "./manifest_source.ts";
