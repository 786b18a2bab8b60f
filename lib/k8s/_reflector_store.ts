/**
 * What a reflector has handed on: each object's resourceVersion by "namespace/name", so a relist
 * or a repeated watch event hands on only real changes, and a change the handler threw on is
 * handed on again at the next list.
 */
import { errorMessage, type Logger } from "../log/mod.ts";
import type { EventType } from "../source/mod.ts";
import { deletedStub, objectKey, sameVersion, unlistedKeys, versionOf } from "./_relist_diff.ts";
import type { KubeObject } from "./watch_lines.ts";

/** The version kept for an object whose change the handler threw on: never the same as any. */
const UNSEEN = "";

/** Who hears of the changes, and the counters a store adds to. */
export interface ReflectorStoreOptions {
  readonly kind: string;
  readonly onChange: (type: EventType, object: KubeObject) => void;
  readonly onHandlerError?: ((err: unknown) => void) | undefined;
  readonly logger: Logger;
  /** Counts `changes` handed on and `handlerErrors`. */
  readonly stats: { changes: number; handlerErrors: number };
}

/** The versions handed on, and the handing on (client-go's store behind a reflector). */
export class ReflectorStore {
  readonly #options: ReflectorStoreOptions;
  readonly #versions = new Map<string, string>();

  constructor(options: ReflectorStoreOptions) {
    this.#options = options;
  }

  /** The resourceVersion of each object as last seen, by "namespace/name". */
  get versions(): ReadonlyMap<string, string> {
    return this.#versions;
  }

  /** How many objects are known. */
  get size(): number {
    return this.#versions.size;
  }

  /** Applies one object event; hands it on unless it is the version already seen. */
  apply(type: "ADDED" | "MODIFIED" | "DELETED", object: KubeObject): void {
    const versions = this.#versions;
    const key = objectKey(object);
    const old = versions.get(key);
    if (type === "DELETED") {
      if (old === undefined) return;
      versions.delete(key);
      // Still known, so the next list, not having it, hands the deletion on again.
      if (!this.#emit("DELETED", object)) versions.set(key, UNSEEN);
      return;
    }
    versions.set(key, versionOf(object));
    let handled = true;
    if (old === undefined) handled = this.#emit("ADDED", object);
    else if (!sameVersion(old, object)) handled = this.#emit("MODIFIED", object);
    // No version counts as seen: the next list hands the object on again.
    if (!handled) versions.set(key, UNSEEN);
  }

  /** Hands on, as deletions, the objects a complete list (`listed` keys) no longer has. */
  deleteUnlisted(listed: ReadonlySet<string>): void {
    const versions = this.#versions;
    for (const key of unlistedKeys(versions, listed)) {
      const stub = deletedStub(key, versions.get(key)!);
      versions.delete(key);
      if (!this.#emit("DELETED", stub)) versions.set(key, UNSEEN);
    }
  }

  /**
   * Hands on one change; false when the handler threw, which is logged, counted, and leaves the
   * caller to make the next list hand the object on again.
   */
  #emit(type: EventType, object: KubeObject): boolean {
    const { stats, logger } = this.#options;
    stats.changes++;
    try {
      this.#options.onChange(type, object);
      return true;
    } catch (err) {
      stats.handlerErrors++;
      logger.error("Event handler failed; the object is handed on again at the next list", {
        kind: this.#options.kind,
        type,
        object: objectKey(object),
        reason: errorMessage(err),
      });
      this.#options.onHandlerError?.(err);
      return false;
    }
  }
}
