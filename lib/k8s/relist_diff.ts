/**
 * The cache a watch keeps per kind, and the diff of a fresh list against it: after a relist
 * (410, restart with a new history) only objects that really changed become events, so no rule
 * is torn down and rebuilt for nothing.
 */
import { deepEqual } from "../proxy/mod.ts";
import type { KubeObject } from "./watch_lines.ts";

/** The cache key of an object: "namespace/name", or "name" for cluster-scoped objects. */
export function objectKey(object: KubeObject): string {
  const ns = object.metadata?.namespace ?? "";
  const name = object.metadata?.name ?? "";
  return ns === "" ? name : `${ns}/${name}`;
}

/** The object without the fields that change on every write or differ list vs watch. */
function comparable(object: KubeObject): unknown {
  const { apiVersion: _a, kind: _k, metadata, ...rest } = object as Record<string, unknown> & {
    metadata?: Record<string, unknown>;
  };
  if (!metadata) return rest;
  const { resourceVersion: _rv, managedFields: _mf, ...meta } = metadata;
  return { ...rest, metadata: meta };
}

/**
 * True when `next` carries nothing new compared with `cached`: the same resourceVersion, or
 * equal content apart from resourceVersion, managedFields, kind and apiVersion (a server whose
 * history restarted hands out new resourceVersions for the same objects).
 */
export function sameObject(cached: KubeObject, next: KubeObject): boolean {
  const a = cached.metadata?.resourceVersion;
  if (a !== undefined && a !== "" && a === next.metadata?.resourceVersion) return true;
  return deepEqual(comparable(cached), comparable(next));
}

/** One change found by diffRelist. */
export interface CacheChange<T extends KubeObject> {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly object: T;
}

/**
 * Compares a complete list with the cache. Returns the changes (additions and modifications
 * in list order, then deletions in key order) and the new cache, which holds the listed
 * objects (so their new resourceVersions are remembered even when no event is due).
 */
export function diffRelist<T extends KubeObject>(
  cache: ReadonlyMap<string, T>,
  items: readonly T[],
): { changes: CacheChange<T>[]; next: Map<string, T> } {
  const next = new Map<string, T>();
  const changes: CacheChange<T>[] = [];
  for (const item of items) next.set(objectKey(item), item); // a duplicate: the last one wins
  for (const [key, item] of next) {
    const old = cache.get(key);
    if (old === undefined) changes.push({ type: "ADDED", object: item });
    else if (!sameObject(old, item)) changes.push({ type: "MODIFIED", object: item });
  }
  const gone = [...cache.keys()].filter((k) => !next.has(k)).sort();
  for (const key of gone) changes.push({ type: "DELETED", object: cache.get(key) as T });
  return { changes, next };
}
