/**
 * What a watch remembers per kind, and the diff of a fresh list against it. Only each object's
 * key and resourceVersion are kept, not the object: the change trackers hold the validated form,
 * and a copy of every raw Service and EndpointSlice cost ~3 MB per 1,000 services (~30 MB at
 * 10,000). A relist (410, restart with a new history) hands on only objects whose
 * resourceVersion moved; the trackers drop those whose content is the same, and the proxy syncs
 * only when something stays pending, so unchanged rules are not touched.
 */
import type { KubeObject } from "./watch_lines.ts";

/** The cache key of an object: "namespace/name", or "name" for cluster-scoped objects. */
export function objectKey(object: KubeObject): string {
  const ns = object.metadata?.namespace ?? "";
  const name = object.metadata?.name ?? "";
  return ns === "" ? name : `${ns}/${name}`;
}

/** An object's resourceVersion, "" when it has none. */
export function versionOf(object: KubeObject): string {
  const rv = object.metadata?.resourceVersion;
  return typeof rv === "string" ? rv : "";
}

/**
 * True when `next` is the version already seen: the same non-empty resourceVersion. An object
 * without one is always handed on (the trackers compare content).
 */
export function sameVersion(seen: string | undefined, next: KubeObject): boolean {
  return seen !== undefined && seen !== "" && seen === versionOf(next);
}

/**
 * A deleted object as the cache can still describe it: its key's namespace and name, which is
 * all a DELETED event's consumer reads.
 */
export function deletedStub(key: string, resourceVersion: string): KubeObject {
  const slash = key.indexOf("/");
  const metadata = slash < 0
    ? { name: key, resourceVersion }
    : { namespace: key.slice(0, slash), name: key.slice(slash + 1), resourceVersion };
  return { metadata };
}

/** One change found by diffRelist. */
export interface CacheChange<T extends KubeObject> {
  readonly type: "ADDED" | "MODIFIED" | "DELETED";
  readonly object: T | KubeObject;
}

/**
 * Compares a complete list with the versions seen so far. Returns the changes (additions and
 * version changes in list order, then deletions in key order, as stubs) and the new versions.
 */
export function diffRelist<T extends KubeObject>(
  versions: ReadonlyMap<string, string>,
  items: readonly T[],
): { changes: CacheChange<T>[]; next: Map<string, string> } {
  const listed = new Map<string, T>();
  for (const item of items) listed.set(objectKey(item), item); // a duplicate: the last one wins
  const next = new Map<string, string>();
  const changes: CacheChange<T>[] = [];
  for (const [key, item] of listed) {
    next.set(key, versionOf(item));
    const seen = versions.get(key);
    if (seen === undefined) changes.push({ type: "ADDED", object: item });
    else if (!sameVersion(seen, item)) changes.push({ type: "MODIFIED", object: item });
  }
  const gone = [...versions.keys()].filter((k) => !listed.has(k)).sort();
  for (const key of gone) {
    changes.push({ type: "DELETED", object: deletedStub(key, versions.get(key)!) });
  }
  return { changes, next };
}
