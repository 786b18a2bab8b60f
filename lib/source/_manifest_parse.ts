/**
 * Turns the text of one manifest file into the Service, EndpointSlice and Node objects it
 * holds (and ServiceCIDRs). Pure: the manifest source does the reading and the logging.
 */
import type { V1EndpointSlice, V1Node, V1Service, V1ServiceCIDR } from "@kubernetes/client-node";
import { parseAllDocuments } from "yaml";
import type { ObjectKind } from "./events.ts";

/** One object found in a manifest file, with its identity key (see manifestObjectKey). */
export type ManifestObject =
  | { readonly kind: "Service"; readonly key: string; readonly object: V1Service }
  | { readonly kind: "EndpointSlice"; readonly key: string; readonly object: V1EndpointSlice }
  | { readonly kind: "Node"; readonly key: string; readonly object: V1Node }
  | { readonly kind: "ServiceCIDR"; readonly key: string; readonly object: V1ServiceCIDR };

/**
 * What a file holds. Any entry in `errors` means the whole file is unusable and its last good
 * objects should be kept; `skipped` objects were dropped alone; `ignored` are other kinds.
 */
export interface ParsedManifest {
  readonly objects: ManifestObject[];
  readonly errors: string[];
  readonly skipped: string[];
  readonly ignored: string[];
}

/** The apiVersion each kind must carry (when it carries one) to be the object kube-proxy reads. */
const API_VERSIONS: Readonly<Record<ObjectKind, string>> = {
  Service: "v1",
  EndpointSlice: "discovery.k8s.io/v1",
  Node: "v1",
  ServiceCIDR: "networking.k8s.io/v1",
};

/** Typed lists whose items may omit `kind`, as the API server returns them. */
const TYPED_LISTS: Readonly<Record<string, ObjectKind>> = {
  ServiceList: "Service",
  EndpointSliceList: "EndpointSlice",
  NodeList: "Node",
  ServiceCIDRList: "ServiceCIDR",
};

/** Lists inside lists are not something kubectl prints; this bounds hostile nesting. */
const MAX_LIST_DEPTH = 4;

/** Identity of an object across files and rescans: kind plus namespace/name. */
export function manifestObjectKey(
  kind: ObjectKind,
  namespace: string | undefined,
  name: string,
): string {
  return isClusterScoped(kind) ? `${kind}/${name}` : `${kind}/${namespace ?? ""}/${name}`;
}

/** Kinds without a namespace: Node and ServiceCIDR. */
function isClusterScoped(kind: ObjectKind): boolean {
  return kind === "Node" || kind === "ServiceCIDR";
}

/**
 * Whether a directory entry is a manifest to read: `*.yaml`, `*.yml` or `*.json`, but not a
 * dotfile or an editor's backup, lock or swap file.
 */
export function isManifestFileName(name: string): boolean {
  if (name.startsWith(".") || name.endsWith("~")) return false;
  return /\.(ya?ml|json)$/i.test(name);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function firstLine(msg: string): string {
  return msg.split("\n", 1)[0]?.trim() ?? msg;
}

/** Splits the text into top-level documents, or reports why it cannot be read. */
function parseDocuments(text: string, fileName: string): { docs: unknown[]; error?: string } {
  if (/\.json$/i.test(fileName)) {
    try {
      return { docs: [JSON.parse(text)] };
    } catch (err) {
      return { docs: [], error: `Invalid JSON: ${firstLine(String((err as Error).message))}` };
    }
  }
  const docs: unknown[] = [];
  for (const [i, doc] of parseAllDocuments(text).entries()) {
    const first = doc.errors[0];
    if (first) {
      return { docs: [], error: `Invalid YAML in document ${i}: ${firstLine(first.message)}` };
    }
    try {
      docs.push(doc.toJS());
    } catch (err) {
      return {
        docs: [],
        error: `Invalid YAML in document ${i}: ${firstLine(String((err as Error).message))}`,
      };
    }
  }
  return { docs };
}

/**
 * Reads the objects of one file: several YAML documents, a JSON value, a `List` or a typed list
 * (`ServiceList`, ...) whose items may lack `kind`. `fileName` names the file in messages and
 * picks JSON parsing for `*.json`.
 */
export function parseManifestText(text: string, fileName: string): ParsedManifest {
  const result: ParsedManifest = { objects: [], errors: [], skipped: [], ignored: [] };
  const parsed = parseDocuments(text, fileName);
  if (parsed.error !== undefined) {
    result.errors.push(parsed.error);
    return result;
  }
  for (const [i, doc] of parsed.docs.entries()) {
    if (doc === null || doc === undefined) continue; // an empty document, e.g. a trailing `---`
    collect(doc, `${i}`, undefined, 0, result);
  }
  if (result.errors.length > 0) result.objects.length = 0;
  return result;
}

/** Adds one document or list item (at `where`, e.g. "0.items[3]") to `out`. */
function collect(
  value: unknown,
  where: string,
  inferred: { kind: ObjectKind; apiVersion: unknown } | undefined,
  depth: number,
  out: ParsedManifest,
): void {
  if (Array.isArray(value)) {
    if (depth >= MAX_LIST_DEPTH) {
      out.errors.push(
        `Item ${where} nests lists too deeply: expected at most ${MAX_LIST_DEPTH} levels`,
      );
      return;
    }
    value.forEach((item, j) => collect(item, `${where}[${j}]`, inferred, depth + 1, out));
    return;
  }
  if (!isRecord(value)) {
    out.errors.push(`Item ${where} is ${JSON.stringify(value)}: expected an object`);
    return;
  }
  const rawKind = value.kind ?? inferred?.kind;
  const kind = typeof rawKind === "string" ? rawKind : undefined;
  if (kind === "List" || (kind !== undefined && kind in TYPED_LISTS)) {
    const items = value.items ?? [];
    if (!Array.isArray(items)) {
      out.errors.push(`Item ${where} is a ${kind} whose items are not a list: expected an array`);
      return;
    }
    const itemKind = TYPED_LISTS[kind];
    const next = itemKind ? { kind: itemKind, apiVersion: value.apiVersion } : undefined;
    collect(items, `${where}.items`, next, depth, out);
    return;
  }
  if (!isWatchedKind(kind)) {
    out.ignored.push(`Item ${where} has kind ${JSON.stringify(rawKind ?? null)}: not watched`);
    return;
  }
  const apiVersion = value.apiVersion ?? inferred?.apiVersion;
  if (apiVersion !== undefined && apiVersion !== API_VERSIONS[kind]) {
    out.ignored.push(
      `Item ${where} is a ${kind} of apiVersion ${JSON.stringify(apiVersion)}: ` +
        `expected ${JSON.stringify(API_VERSIONS[kind])}`,
    );
    return;
  }
  const problem = identityProblem(kind, value.metadata);
  if (problem !== undefined) {
    out.skipped.push(`Item ${where} (${kind}) ${problem}`);
    return;
  }
  const meta = value.metadata as { name: string; namespace?: string };
  const key = manifestObjectKey(kind, meta.namespace, meta.name);
  const object = { ...value, apiVersion: apiVersion ?? API_VERSIONS[kind], kind };
  switch (kind) {
    case "Service":
      out.objects.push({ kind, key, object: object as V1Service });
      break;
    case "EndpointSlice":
      out.objects.push({ kind, key, object: object as V1EndpointSlice });
      break;
    case "Node":
      out.objects.push({ kind, key, object: object as V1Node });
      break;
    case "ServiceCIDR":
      out.objects.push({ kind, key, object: object as V1ServiceCIDR });
      break;
  }
}

function isWatchedKind(kind: string | undefined): kind is ObjectKind {
  return kind !== undefined && Object.hasOwn(API_VERSIONS, kind);
}

/** Why an object cannot be identified (or its labels filtered), or undefined when it can. */
function identityProblem(kind: ObjectKind, metadata: unknown): string | undefined {
  if (!isRecord(metadata)) return "has no metadata: expected metadata.name";
  const { name, namespace, labels } = metadata;
  if (typeof name !== "string" || name === "") {
    return `has metadata.name ${JSON.stringify(name ?? null)}: expected a non-empty string`;
  }
  if (!isClusterScoped(kind) && (typeof namespace !== "string" || namespace === "")) {
    return `"${name}" has metadata.namespace ${
      JSON.stringify(namespace ?? null)
    }: expected a non-empty string`;
  }
  if (labels !== undefined && labels !== null && !isRecord(labels)) {
    return `"${name}" has metadata.labels ${JSON.stringify(labels)}: expected a map`;
  }
  return undefined;
}
