/**
 * The pure half of the manifest source: merging the objects of many files into the state
 * kube-proxy should see, and turning two such states into watch events.
 */
import type { ObjectEvent } from "./events.ts";
import { selectedByProxyLabels } from "./events.ts";
import type { ManifestObject } from "./_manifest_parse.ts";

/** Delivered objects by identity key (kind + namespace/name). */
export type ManifestState = ReadonlyMap<string, ManifestObject>;

/** The objects one file currently contributes. */
export interface ManifestFileObjects {
  readonly path: string;
  readonly objects: readonly ManifestObject[];
}

/** An object defined in more than one file; the file whose path sorts last wins. */
export interface ManifestDuplicate {
  readonly key: string;
  readonly winner: string;
  readonly losers: readonly string[];
}

/** The merged state and the duplicates found while merging. */
export interface MergedManifests {
  readonly state: ManifestState;
  readonly duplicates: readonly ManifestDuplicate[];
}

/**
 * Whether kube-proxy would see this object through its watches: Services and slices without
 * the service-proxy-name/headless labels, and only this node's Node (a field selector upstream).
 */
export function isDeliveredObject(obj: ManifestObject, nodeName: string): boolean {
  if (obj.kind === "Node") return obj.object.metadata?.name === nodeName;
  if (obj.kind === "ServiceCIDR") return true;
  return selectedByProxyLabels(obj.object.metadata?.labels);
}

/**
 * Merges the files' objects in path order (last wins) and keeps what kube-proxy would see.
 * Duplicates are reported even when the object is then filtered out.
 */
export function mergeManifestFiles(
  files: readonly ManifestFileObjects[],
  nodeName: string,
): MergedManifests {
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  const all = new Map<string, ManifestObject>();
  const sources = new Map<string, string[]>();
  for (const file of sorted) {
    for (const obj of file.objects) {
      all.set(obj.key, obj);
      const paths = sources.get(obj.key) ?? [];
      if (paths.at(-1) !== file.path) paths.push(file.path);
      sources.set(obj.key, paths);
    }
  }
  const duplicates: ManifestDuplicate[] = [];
  for (const [key, paths] of sources) {
    if (paths.length < 2) continue;
    duplicates.push({ key, winner: paths.at(-1) ?? "", losers: paths.slice(0, -1) });
  }
  const state = new Map<string, ManifestObject>();
  for (const [key, obj] of all) {
    if (isDeliveredObject(obj, nodeName)) state.set(key, obj);
  }
  return { state, duplicates };
}

/** JSON with object keys sorted, so that equal objects give equal strings. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== "object" || v === null || Array.isArray(v)) return v;
    const rec = v as Record<string, unknown>;
    return Object.fromEntries(Object.keys(rec).sort().map((k) => [k, rec[k]]));
  });
}

function toEvent(obj: ManifestObject, type: ObjectEvent["type"]): ObjectEvent {
  switch (obj.kind) {
    case "Service":
      return { kind: obj.kind, type, object: obj.object };
    case "EndpointSlice":
      return { kind: obj.kind, type, object: obj.object };
    case "Node":
      return { kind: obj.kind, type, object: obj.object };
    case "ServiceCIDR":
      return { kind: obj.kind, type, object: obj.object };
  }
}

/**
 * The watch events that turn `prev` into `next`, ordered by key: ADDED for new keys, MODIFIED
 * only when the object really changed, DELETED (with the last known object) for keys now gone.
 */
export function diffManifestStates(prev: ManifestState, next: ManifestState): ObjectEvent[] {
  const keys = [...new Set([...prev.keys(), ...next.keys()])].sort();
  const events: ObjectEvent[] = [];
  for (const key of keys) {
    const before = prev.get(key);
    const after = next.get(key);
    if (after === undefined) {
      if (before !== undefined) events.push(toEvent(before, "DELETED"));
    } else if (before === undefined) {
      events.push(toEvent(after, "ADDED"));
    } else if (canonicalJson(before.object) !== canonicalJson(after.object)) {
      events.push(toEvent(after, "MODIFIED"));
    }
  }
  return events;
}
