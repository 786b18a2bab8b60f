/**
 * Starts a source before its real sink exists, so the first lists travel while the start-up
 * checks run: what arrives is kept in order until attach() hands over the sink, then replayed
 * and forwarded as it comes.
 */
import type { ObjectEvent, ObjectKind, ObjectSink, ObjectSource } from "./events.ts";

/** A source already running into a buffer. */
export interface EarlySource {
  /**
   * The source to give the consumer: replays what came so far into `sink`, then forwards.
   * Its start() resolves (or rejects) with the running source; its signal is ignored, the one
   * given to startEarly governs. Attach once.
   */
  attach(sink: ObjectSink): ObjectSource;
}

type Delivery = { readonly event: ObjectEvent } | { readonly synced: ObjectKind };

/** Starts `factory`'s source now, with `signal`, into a buffer. */
export function startEarly(
  factory: (sink: ObjectSink) => ObjectSource,
  signal: AbortSignal,
): EarlySource {
  let buffer: Delivery[] | undefined = [];
  let target: ObjectSink | undefined;
  const deliver = (d: Delivery, to: ObjectSink) => {
    if ("event" in d) to.onEvent(d.event);
    else to.onSynced(d.synced);
  };
  const relay: ObjectSink = {
    onEvent(event) {
      if (target) target.onEvent(event);
      else buffer?.push({ event });
    },
    onSynced(kind) {
      if (target) target.onSynced(kind);
      else buffer?.push({ synced: kind });
    },
    // Lists before attach() are followed by the first sync, which reclaims after itself.
    onListed(kind) {
      target?.onListed?.(kind);
    },
  };
  const running = factory(relay).start(signal);
  // Observed by attach().start(); until then a failure must not surface as unhandled.
  running.catch(() => {});
  return {
    attach(sink) {
      if (target !== undefined || buffer === undefined) {
        throw new Error("An early-started source can be attached only once");
      }
      const pending = buffer;
      buffer = undefined;
      for (const d of pending) deliver(d, sink);
      target = sink;
      return { start: () => running };
    },
  };
}
