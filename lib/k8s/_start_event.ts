/**
 * The "Starting kube-proxy" Event (events.k8s.io/v1) kube-proxy records for its Node at start.
 * Best effort: a failure is logged and never stops the proxy.
 */
import type { Logger } from "../log/mod.ts";
import { silentLogger } from "../log/mod.ts";
import { errorMessage } from "../log/mod.ts";
import { parseStatus, statusError } from "./_api_errors.ts";
import type { ApiTransport } from "./transport.ts";

/** Namespace of events about cluster-scoped objects such as Nodes. */
export const NODE_EVENT_NAMESPACE = "default";

/** Formats a metav1.MicroTime (RFC 3339 with microseconds, UTC). */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** The Event object kube-proxy posts when it starts on `nodeName` at `nowMs`. */
export function startingEvent(nodeName: string, nowMs: number): Record<string, unknown> {
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: {
      // Upstream names events "<object name>.<unix nanoseconds in hex>".
      name: `${nodeName}.${(BigInt(nowMs) * 1_000_000n).toString(16)}`,
      namespace: NODE_EVENT_NAMESPACE,
    },
    eventTime: microTime(nowMs),
    reportingController: "kube-proxy",
    reportingInstance: `kube-proxy-${nodeName}`,
    action: "StartKubeProxy",
    reason: "Starting",
    type: "Normal",
    note: "Starting kube-proxy",
    // kube-proxy refers to its Node by name and uses the name as UID, as upstream does.
    regarding: { apiVersion: "v1", kind: "Node", name: nodeName, uid: nodeName },
  };
}

/** Options of postStartingEvent. */
export interface StartingEventOptions {
  readonly transport: ApiTransport;
  readonly nodeName: string;
  readonly logger?: Logger;
  readonly now?: () => number;
  readonly signal?: AbortSignal;
}

/** Posts the Starting event; returns whether the API server accepted it. Never throws. */
export async function postStartingEvent(options: StartingEventOptions): Promise<boolean> {
  const logger = options.logger ?? silentLogger;
  const now = options.now ?? Date.now;
  const event = startingEvent(options.nodeName, now());
  try {
    const response = await options.transport.request({
      method: "POST",
      path: `/apis/events.k8s.io/v1/namespaces/${NODE_EVENT_NAMESPACE}/events`,
      body: event,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    try {
      const text = await response.text();
      if (response.status < 200 || response.status >= 300) {
        throw statusError("Cannot post the Starting event", response.status, parseStatus(text));
      }
    } finally {
      await response.close();
    }
    logger.debug(2, "Posted the Starting event", { node: options.nodeName });
    return true;
  } catch (err) {
    if (options.signal?.aborted) return false;
    logger.warn("Cannot post the Starting event (best effort)", {
      node: options.nodeName,
      reason: errorMessage(err),
    });
    return false;
  }
}
