/**
 * What a watch remembers per kind, and the diff of a fresh list against it. Only each object's
 * key and resourceVersion are kept, not the object: the change trackers hold the validated form,
 * and a copy of every raw Service and EndpointSlice would cost memory in proportion to the
 * cluster. A relist (410, restart with a new history) hands on only objects whose
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

/**
 * The keys seen before that a complete list no longer has, in key order: the list's deletions.
 * (The list's additions and version changes are found object by object, as it is decoded.)
 */
export function unlistedKeys(
  versions: ReadonlyMap<string, string>,
  listed: ReadonlySet<string>,
): string[] {
  return [...versions.keys()].filter((k) => !listed.has(k)).sort();
}
