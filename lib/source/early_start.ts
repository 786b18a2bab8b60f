/**
 * Starts a source before its real sink exists, so the first lists travel while the start-up
 * checks run. Events that arrive meanwhile go to an early consumer as they come (the tracker:
 * raw lists held until attach() cost more memory than their decoded state); the synced signals
 * are kept and replayed when attach() hands over the sink, which gets everything after.
 */
import type { ObjectEvent, ObjectKind, ObjectSink, ObjectSource } from "./events.ts";

/** A source already running into a buffer. */
export interface EarlySource {
  /**
   * The source to give the consumer: replays the synced signals so far into `sink`, then
   * forwards everything.
   * Its start() resolves (or rejects) with the running source; its signal is ignored, the one
   * given to startEarly governs. Attach once.
   */
  attach(sink: ObjectSink): ObjectSource;
}

/** Starts `factory`'s source now, with `signal`; events go to `early` until attach(). */
export function startEarly(
  factory: (sink: ObjectSink) => ObjectSource,
  signal: AbortSignal,
  early: (event: ObjectEvent) => void,
): EarlySource {
  let synced: ObjectKind[] | undefined = [];
  let target: ObjectSink | undefined;
  const relay: ObjectSink = {
    onEvent(event) {
      if (target) target.onEvent(event);
      else early(event);
    },
    onSynced(kind) {
      if (target) target.onSynced(kind);
      else synced?.push(kind);
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
      if (target !== undefined || synced === undefined) {
        throw new Error("An early-started source can be attached only once");
      }
      const pending = synced;
      synced = undefined;
      for (const kind of pending) sink.onSynced(kind);
      target = sink;
      return { start: () => running };
    },
  };
}
