/**
 * The object store behind the test API server: one global, monotonically increasing
 * resourceVersion (like etcd's revision), a bounded event history for watch replay, and
 * validation + defaulting on every checked write.
 */
import { Allocator, defaultEndpointSlice, defaultService } from "./defaults.ts";
import { apiVersionOf, RESOURCE_TYPES, resourceTypeOfKind } from "./resources.ts";
import { failureStatus, StatusError } from "./status.ts";
import { VALIDATORS } from "./validation.ts";

// deno-lint-ignore no-explicit-any
export type KubeObject = any;

/** A change as kept in the history and fanned out to watches. */
export interface StoreEvent {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly kind: string;
  /** The resourceVersion of this change. */
  readonly rv: number;
  readonly object: KubeObject;
  /** The object before the change (MODIFIED and DELETED), for selector transitions. */
  readonly previous?: KubeObject;
}

/** Options of a store write. */
export interface WriteOptions {
  /** false inserts the object as given: no defaulting, no validation (for bad-object tests). */
  readonly validate?: boolean;
}

/** Store tuning. */
export interface StoreOptions {
  /** Changes kept for watch replay; older resourceVersions get 410 (default 1000). */
  readonly historyLimit?: number;
  /** First resourceVersion handed out minus one (default 1000). */
  readonly initialResourceVersion?: number;
  /** Time source for creationTimestamp (default Date.now). */
  readonly now?: () => number;
}

function keyOf(namespace: string | undefined, name: string): string {
  return namespace ? `${namespace}/${name}` : name;
}

/** Kubernetes objects by kind, with history. */
export class ObjectStore {
  #rv: number;
  /** Every change with rv <= this has been dropped from the history. */
  #compactedRv: number;
  readonly #objects = new Map<string, Map<string, KubeObject>>();
  #history: StoreEvent[] = [];
  readonly #listeners = new Set<(ev: StoreEvent) => void>();
  readonly #historyLimit: number;
  readonly #now: () => number;
  readonly #alloc = new Allocator();
  #uidCounter = 0;
  #nameCounter = 0;

  constructor(opts: StoreOptions = {}) {
    this.#rv = opts.initialResourceVersion ?? 1000;
    this.#compactedRv = this.#rv;
    this.#historyLimit = opts.historyLimit ?? 1000;
    this.#now = opts.now ?? Date.now;
    for (const kind of Object.keys(RESOURCE_TYPES)) this.#objects.set(kind, new Map());
  }

  /** The current (latest) resourceVersion as a number. */
  get revision(): number {
    return this.#rv;
  }

  /** The current resourceVersion as the string the API uses. */
  get resourceVersion(): string {
    return String(this.#rv);
  }

  /** The oldest resourceVersion a watch may still start from. */
  get oldestWatchable(): number {
    return this.#compactedRv;
  }

  /** A deep copy of one object, or undefined. */
  get(kind: string, namespace: string | undefined, name: string): KubeObject | undefined {
    const obj = this.#bucket(kind).get(keyOf(namespace, name));
    return obj === undefined ? undefined : structuredClone(obj);
  }

  /** Deep copies of every object of a kind, sorted by namespace/name (etcd key order). */
  list(kind: string): KubeObject[] {
    return [...this.#bucket(kind).entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => structuredClone(o));
  }

  /** Creates an object; throws StatusError 409 if it exists, 422 if invalid. */
  create(obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    const o = this.#prepare(obj, opts);
    const type = resourceTypeOfKind(o.kind);
    const bucket = this.#bucket(o.kind);
    if ((o.metadata.name ?? "") === "" && typeof o.metadata.generateName === "string") {
      o.metadata.name = `${o.metadata.generateName}${
        (++this.#nameCounter).toString(36).padStart(5, "0")
      }`;
    }
    const key = keyOf(o.metadata.namespace, o.metadata.name);
    if (bucket.has(key)) {
      throw new StatusError(
        failureStatus(409, `${type.resource} "${o.metadata.name}" already exists`, {
          name: o.metadata.name,
          group: type.group,
          kind: type.resource,
        }),
      );
    }
    if (opts.validate !== false) this.#defaultAndValidate(o);
    o.metadata.uid ??= this.#uid();
    o.metadata.creationTimestamp ??= new Date(this.#now()).toISOString().replace(/\.\d+Z$/, "Z");
    o.metadata.generation ??= 1;
    return this.#commit("ADDED", o, undefined, key);
  }

  /** Replaces an existing object; 404 if missing, 409 on a stale metadata.resourceVersion. */
  update(obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    const o = this.#prepare(obj, opts);
    const type = resourceTypeOfKind(o.kind);
    const key = keyOf(o.metadata.namespace, o.metadata.name);
    const old = this.#bucket(o.kind).get(key);
    if (old === undefined) {
      throw new StatusError(
        failureStatus(404, `${type.resource} "${o.metadata.name}" not found`, {
          name: o.metadata.name,
          kind: type.resource,
        }),
      );
    }
    const given = o.metadata.resourceVersion;
    if (given !== undefined && given !== "" && given !== old.metadata?.resourceVersion) {
      throw new StatusError(
        failureStatus(
          409,
          `Operation cannot be fulfilled on ${type.resource} "${o.metadata.name}": the object ` +
            `has been modified; please apply your changes to the latest version and try again`,
        ),
      );
    }
    if (opts.validate !== false) this.#defaultAndValidate(o);
    o.metadata.uid = old.metadata?.uid ?? this.#uid();
    o.metadata.creationTimestamp = old.metadata?.creationTimestamp;
    const specChanged = JSON.stringify(o.spec) !== JSON.stringify(old.spec);
    o.metadata.generation = (old.metadata?.generation ?? 1) + (specChanged ? 1 : 0);
    return this.#commit("MODIFIED", o, old, key);
  }

  /** Creates or replaces (ignoring metadata.resourceVersion). */
  apply(obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    const kind = obj?.kind;
    const existing = this.get(kind, obj?.metadata?.namespace, obj?.metadata?.name ?? "");
    if (existing === undefined) return this.create(obj, opts);
    const copy = structuredClone(obj);
    delete copy.metadata.resourceVersion;
    return this.update(copy, opts);
  }

  /** Deletes an object; returns its final state (with the deletion's resourceVersion). */
  delete(kind: string, namespace: string | undefined, name: string): KubeObject {
    const type = resourceTypeOfKind(kind);
    const key = keyOf(type.namespaced ? namespace : undefined, name);
    const old = this.#bucket(kind).get(key);
    if (old === undefined) {
      throw new StatusError(
        failureStatus(404, `${type.resource} "${name}" not found`, { name, kind: type.resource }),
      );
    }
    return this.#commit("DELETED", structuredClone(old), old, key);
  }

  /** Changes after `rv` for one kind, or undefined when `rv` is older than the kept history. */
  changesSince(kind: string, rv: number): StoreEvent[] | undefined {
    if (rv < this.#compactedRv) return undefined;
    return this.#history.filter((e) => e.rv > rv && e.kind === kind);
  }

  /** Calls `fn` for every change from now on; returns the unsubscribe function. */
  subscribe(fn: (ev: StoreEvent) => void): () => void {
    this.#listeners.add(fn);
    return () => this.#listeners.delete(fn);
  }

  /**
   * Drops the whole history, like an etcd compaction, and advances the resourceVersion by one (as
   * an unrelated write would) so every resourceVersion a client has seen is now too old.
   */
  compact(): void {
    this.#rv++;
    this.#history = [];
    this.#compactedRv = this.#rv;
  }

  /**
   * Forgets the history and continues with a new resourceVersion sequence starting `jump`
   * above the current one (as after an etcd restore); objects are kept as they are.
   */
  newHistory(jump = 1_000_000): void {
    this.#rv += jump;
    this.#history = [];
    this.#compactedRv = this.#rv;
  }

  #bucket(kind: string): Map<string, KubeObject> {
    const b = this.#objects.get(kind);
    if (b === undefined) resourceTypeOfKind(kind);
    return b!;
  }

  #uid(): string {
    const n = (++this.#uidCounter).toString(16).padStart(12, "0");
    return `00000000-0000-4000-8000-${n}`;
  }

  #prepare(obj: KubeObject, opts: WriteOptions): KubeObject {
    if (typeof obj !== "object" || obj === null) {
      throw new StatusError(
        failureStatus(400, `Object ${JSON.stringify(obj)} is not a JSON object`),
      );
    }
    const o = structuredClone(obj);
    const type = resourceTypeOfKind(o.kind);
    o.apiVersion ??= apiVersionOf(type);
    if (opts.validate !== false && o.apiVersion !== apiVersionOf(type)) {
      throw new StatusError(
        failureStatus(
          400,
          `Wrong apiVersion "${o.apiVersion}" for ${o.kind}: expected "${apiVersionOf(type)}"`,
        ),
      );
    }
    o.metadata ??= {};
    if (!type.namespaced) delete o.metadata.namespace;
    return o;
  }

  #defaultAndValidate(o: KubeObject): void {
    if (o.kind === "Service") defaultService(o, this.#alloc);
    if (o.kind === "EndpointSlice") defaultEndpointSlice(o);
    const causes = VALIDATORS[o.kind]?.(o) ?? [];
    if (causes.length > 0) {
      const type = resourceTypeOfKind(o.kind);
      const name = o.metadata?.name ?? "";
      throw new StatusError(
        failureStatus(
          422,
          `${o.kind} "${name}" is invalid: ${
            causes.map((c) => `${c.field}: ${c.message}`).join(", ")
          }`,
          { name, group: type.group, kind: o.kind, causes },
        ),
      );
    }
  }

  #commit(
    type: StoreEvent["type"],
    o: KubeObject,
    previous: KubeObject | undefined,
    key: string,
  ): KubeObject {
    const rv = ++this.#rv;
    o.metadata.resourceVersion = String(rv);
    const bucket = this.#bucket(o.kind);
    if (type === "DELETED") bucket.delete(key);
    else bucket.set(key, o);
    const ev: StoreEvent = {
      type,
      kind: o.kind,
      rv,
      object: o,
      ...(previous !== undefined ? { previous } : {}),
    };
    this.#history.push(ev);
    while (this.#history.length > this.#historyLimit) {
      this.#compactedRv = this.#history.shift()!.rv;
    }
    for (const l of [...this.#listeners]) l(ev);
    return structuredClone(o);
  }
}
