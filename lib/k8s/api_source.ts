/**
 * The API-server source of cluster state: one list+watch loop each for Services,
 * EndpointSlices (upstream's label selector) and this node's Node, all feeding the same sink,
 * plus the best-effort Starting event.
 */
import { silentLogger } from "../log/mod.ts";
import type { ObjectEvent, ObjectKind, ObjectSink, ObjectSource } from "../source/mod.ts";
import {
  createReflector,
  type Reflector,
  type ReflectorOptions,
  type ReflectorStats,
} from "./reflector.ts";
import { proxyResources } from "./resources.ts";
import { postStartingEvent } from "./_start_event.ts";

/** Options of createApiSource; only transport, nodeName and sink are required. */
export interface ApiSourceOptions extends
  Pick<
    ReflectorOptions,
    | "transport"
    | "logger"
    | "clock"
    | "random"
    | "backoff"
    | "pageSize"
    | "idleTimeoutMs"
    | "minWatchTimeoutSeconds"
    | "protobufLists"
  > {
  /** This node: its Node is watched by name and named in the Starting event. */
  readonly nodeName: string;
  readonly sink: ObjectSink;
  /** Post the "Starting kube-proxy" Event at start. Default true. */
  readonly postStartingEvent?: boolean;
  /** Told of each change of `kind` the sink threw on (the reflector also logs it). */
  readonly onHandlerError?: (kind: ObjectKind, err: unknown) => void;
}

/** The API source; stats() exposes each loop's counters. */
export interface ApiSource extends ObjectSource {
  /** Counters per kind. */
  stats(): Record<ObjectKind, ReflectorStats>;
}

/**
 * Creates the source. start(signal) runs the three loops until `signal` aborts and resolves
 * once they have all stopped; it never rejects: errors are logged and retried.
 */
export function createApiSource(options: ApiSourceOptions): ApiSource {
  const { nodeName, sink, postStartingEvent: post, onHandlerError, ...loopOptions } = options;
  const logger = options.logger ?? silentLogger;
  const reflectors = new Map<ObjectKind, Reflector>();
  for (const resource of proxyResources(nodeName)) {
    const kind = resource.kind;
    reflectors.set(
      kind,
      createReflector({
        ...loopOptions,
        resource,
        onChange: (type, object) => sink.onEvent({ kind, type, object } as ObjectEvent),
        onSynced: () => {
          logger.info("Initial list complete", { kind });
          sink.onSynced(kind);
        },
        onListed: () => sink.onListed?.(kind),
        ...(onHandlerError ? { onHandlerError: (err: unknown) => onHandlerError(kind, err) } : {}),
        logger,
      }),
    );
  }
  return {
    async start(signal: AbortSignal): Promise<void> {
      logger.info("Watching the API server", { server: options.transport.server });
      const loops = [...reflectors.values()].map((r) => r.start(signal));
      if (post ?? true) {
        loops.push(
          postStartingEvent({
            transport: options.transport,
            nodeName,
            logger,
            signal,
          }).then(() => {}),
        );
      }
      await Promise.all(loops);
    },
    stats() {
      const out = {} as Record<ObjectKind, ReflectorStats>;
      for (const [kind, r] of reflectors) out[kind] = r.stats();
      return out;
    },
  };
}
