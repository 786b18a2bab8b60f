/**
 * What every source of cluster state (the API watch in lib/k8s, the manifest files in
 * lib/source) hands to the brain: add/update/delete events for raw objects, and a signal per
 * kind once its initial state is known.
 */
import type { V1EndpointSlice, V1Node, V1Service, V1ServiceCIDR } from "@kubernetes/client-node";

/**
 * The kinds of object kube-proxy watches. ServiceCIDR (networking.k8s.io/v1) is optional: a
 * server that does not serve it is treated as having none.
 */
export type ObjectKind = "Service" | "EndpointSlice" | "Node" | "ServiceCIDR";

/** Every ObjectKind, in a fixed order (sources signal synced for each). */
export const OBJECT_KINDS: readonly ObjectKind[] = [
  "Service",
  "EndpointSlice",
  "Node",
  "ServiceCIDR",
];

/** Watch event types, as the API server names them. */
export type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** One change to one object. Objects are raw and untrusted: the brain validates them. */
export type ObjectEvent =
  | { readonly kind: "Service"; readonly type: EventType; readonly object: V1Service }
  | { readonly kind: "EndpointSlice"; readonly type: EventType; readonly object: V1EndpointSlice }
  | { readonly kind: "Node"; readonly type: EventType; readonly object: V1Node }
  | { readonly kind: "ServiceCIDR"; readonly type: EventType; readonly object: V1ServiceCIDR };

/** Receives events from a source. */
export interface ObjectSink {
  /** One object was added, modified or deleted. */
  onEvent(event: ObjectEvent): void;
  /** The initial state of `kind` is fully delivered (upstream's HasSynced). */
  onSynced(kind: ObjectKind): void;
  /**
   * A whole list of `kind` was read and applied: the initial one or a relist, even one that
   * changed nothing. The memory it took can be given back once things go quiet.
   */
  onListed?(kind: ObjectKind): void;
}

/** A source of cluster state. Constructing one does no I/O; start() does. */
export interface ObjectSource {
  /** Delivers the initial state, then changes, until `signal` aborts. */
  start(signal: AbortSignal): Promise<void>;
}

/** Label that hands a Service to another proxy implementation. */
export const SERVICE_PROXY_NAME_LABEL = "service.kubernetes.io/service-proxy-name";
/** Label that marks a headless Service (and its slices). */
export const HEADLESS_LABEL = "service.kubernetes.io/headless";

/**
 * Upstream's label selector `!service-proxy-name,!headless`: true when kube-proxy must handle
 * an object with these labels.
 */
export function selectedByProxyLabels(
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  if (!labels) return true;
  return !(SERVICE_PROXY_NAME_LABEL in labels) && !(HEADLESS_LABEL in labels);
}
