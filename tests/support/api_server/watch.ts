/**
 * One open watch: replays history after the requested resourceVersion, then streams live
 * changes as newline-delimited JSON, with bookmarks, a server-side timeout and fault hooks.
 */
import { apiVersionOf, type ResourceType } from "./resources.ts";
import {
  type FieldRequirement,
  type LabelRequirement,
  matchesFields,
  matchesLabels,
  type Selector,
} from "./selectors.ts";
import { expiredStatus } from "./status.ts";
import type { KubeObject, ObjectStore, StoreEvent } from "./store.ts";

/** Where a watch writes; implemented over the HTTP response. */
export interface WatchSink {
  write(text: string): void;
  /** Ends the response cleanly (terminating chunk). */
  end(): void;
  /** Drops the connection without ending the response. */
  destroy(): void;
}

/** What a watch asks for. */
export interface WatchRequest {
  readonly type: ResourceType;
  readonly namespace?: string;
  readonly labels: Selector<LabelRequirement>;
  readonly fields: Selector<FieldRequirement>;
  /** The `resourceVersion` query parameter ("" or "0": start with the current state). */
  readonly resourceVersion: string;
  readonly allowBookmarks: boolean;
  readonly timeoutSeconds?: number;
  readonly sendInitialEvents?: boolean;
}

/** Server-wide watch settings. */
export interface WatchSettings {
  /** How often a bookmark is sent to watches that asked for them (ms). */
  readonly bookmarkIntervalMs: number;
}

/** An open watch stream. */
export class WatchStream {
  #stalled = false;
  #closed = false;
  #timers: ReturnType<typeof setTimeout>[] = [];
  #unsubscribe: () => void = () => {};
  /** Called once when the stream ends for any reason. */
  onClose: () => void = () => {};

  constructor(
    readonly request: WatchRequest,
    readonly sink: WatchSink,
    readonly store: ObjectStore,
    settings: WatchSettings,
  ) {
    const { resourceVersion: rv, type } = request;
    const start = rv === "" || rv === "0" || request.sendInitialEvents === true;
    let replay: StoreEvent[] | undefined = [];
    if (start) {
      for (const o of store.list(type.kind)) {
        if (this.#matches(o)) this.#send("ADDED", o);
      }
      if (request.sendInitialEvents === true) this.#bookmark(true);
    } else {
      const n = /^\d+$/.test(rv) ? Number(rv) : NaN;
      replay = Number.isNaN(n) ? undefined : store.changesSince(type.kind, n);
      if (replay === undefined) {
        this.#write({
          type: "ERROR",
          object: expiredStatus(rv, store.oldestWatchable),
        });
        this.close();
        return;
      }
    }
    for (const ev of replay) this.#deliver(ev);
    this.#unsubscribe = store.subscribe((ev) => {
      if (ev.kind === type.kind) this.#deliver(ev);
    });
    if (request.allowBookmarks) {
      this.#timers.push(setInterval(() => this.#bookmark(false), settings.bookmarkIntervalMs));
    }
    if (request.timeoutSeconds !== undefined) {
      this.#timers.push(setTimeout(() => this.close(), request.timeoutSeconds * 1000));
    }
  }

  /** True once ended or dropped. */
  get closed(): boolean {
    return this.#closed;
  }

  /** From now on nothing is sent (no events, no bookmarks, no end): the connection just idles. */
  stall(): void {
    this.#stalled = true;
    this.#clearTimers();
  }

  /** Writes raw text (e.g. a malformed line) unless stalled. */
  writeRaw(text: string): void {
    if (!this.#closed && !this.#stalled) this.sink.write(text);
  }

  /** Ends the stream cleanly, as the server does at timeoutSeconds. */
  close(): void {
    if (this.#closed) return;
    this.#finish();
    this.sink.end();
  }

  /** Drops the connection abruptly (no terminating chunk). */
  cut(): void {
    if (this.#closed) return;
    this.#finish();
    this.sink.destroy();
  }

  /** Marks the stream closed after the client went away. */
  detach(): void {
    if (!this.#closed) this.#finish();
  }

  #finish(): void {
    this.#closed = true;
    this.#clearTimers();
    this.#unsubscribe();
    this.onClose();
  }

  #clearTimers(): void {
    for (const t of this.#timers) clearTimeout(t);
    this.#timers = [];
  }

  #matches(o: KubeObject | undefined): boolean {
    if (o === undefined) return false;
    const meta = o.metadata ?? {};
    const ns = this.request.namespace;
    if (ns !== undefined && meta.namespace !== ns) return false;
    return matchesLabels(this.request.labels, meta.labels) &&
      matchesFields(this.request.fields, meta);
  }

  /** Selector transitions become ADDED/DELETED, like the real watch cache. */
  #deliver(ev: StoreEvent): void {
    const now = ev.type !== "DELETED" && this.#matches(ev.object);
    const before = this.#matches(ev.previous);
    if (ev.type === "DELETED") {
      if (before) this.#send("DELETED", ev.object);
    } else if (now && before) this.#send("MODIFIED", ev.object);
    else if (now) this.#send("ADDED", ev.object);
    else if (before) {
      this.#send("DELETED", { ...ev.object, metadata: { ...ev.object.metadata } });
    }
  }

  #send(type: string, o: KubeObject): void {
    this.#write({
      type,
      object: { ...o, kind: this.request.type.kind, apiVersion: apiVersionOf(this.request.type) },
    });
  }

  #bookmark(initialEnd: boolean): void {
    const type = this.request.type;
    this.#write({
      type: "BOOKMARK",
      object: {
        kind: type.kind,
        apiVersion: apiVersionOf(type),
        metadata: {
          resourceVersion: this.store.resourceVersion,
          ...(initialEnd ? { annotations: { "k8s.io/initial-events-end": "true" } } : {}),
        },
      },
    });
  }

  #write(ev: unknown): void {
    if (this.#closed || this.#stalled) return;
    this.sink.write(`${JSON.stringify(ev)}\n`);
  }
}
