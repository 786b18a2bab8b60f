/**
 * List requests as kube-apiserver 1.28 serves them, by resourceVersion:
 * - "0": from the watch cache, the current state in one answer (limit ignored), unless the
 *   server is set to page those too (`pageWatchCacheLists`, as newer servers that page from
 *   the watch cache do);
 * - "" (or a continue token): from etcd, paged by limit, continue tokens pinned to the first
 *   page's resourceVersion, 410 once that revision is compacted;
 * - "N" without limit: from the watch cache, state no older than N in one answer;
 * - "N" with limit: from etcd at exactly N, so 410 once N is compacted;
 * - "N" above the current revision: 504 with cause ResourceVersionTooLarge (the real server
 *   waits 3 s for its cache first; this one answers at once).
 */
import { failureStatus, StatusError } from "./status.ts";
import type { KubeObject, ObjectStore } from "./store.ts";

/** How the server treats `limit` on resourceVersion=0 lists. */
export interface ListSettings {
  /** Honour limit on resourceVersion=0 lists too (default false: answer them whole). */
  readonly pageWatchCacheLists?: boolean;
}

/** One list request, its objects already filtered by namespace and selectors. */
export interface ListRequest {
  readonly query: URLSearchParams;
  /** Matching objects in key order. */
  readonly matching: (o: KubeObject) => boolean;
  readonly kind: string;
  /** Whether remainingItemCount may be given (only without selectors, as the real server). */
  readonly countRemaining: boolean;
}

/** The list body minus kind/apiVersion: metadata and items. */
export interface ListResult {
  readonly metadata: Record<string, unknown>;
  readonly items: KubeObject[];
}

interface ContinueToken {
  readonly rv: number;
  readonly start: string;
}

function encodeContinue(t: ContinueToken): string {
  return btoa(JSON.stringify(t));
}

function decodeContinue(s: string): ContinueToken {
  try {
    const t = JSON.parse(atob(s));
    if (typeof t.rv === "number" && typeof t.start === "string") return t;
  } catch { /* fall through */ }
  throw new StatusError(failureStatus(400, `Invalid continue token "${s}"`));
}

/** "namespace/name", the order lists and continue tokens follow. */
export function keyOf(o: KubeObject): string {
  const m = o.metadata ?? {};
  return m.namespace ? `${m.namespace}/${m.name}` : m.name;
}

function expired(message: string): StatusError {
  return new StatusError(failureStatus(410, message));
}

/** Answers a list; throws StatusError for 400, 410 and 504. */
export function listObjects(
  store: ObjectStore,
  request: ListRequest,
  settings: ListSettings = {},
): ListResult {
  const q = request.query;
  const cont = q.get("continue") ?? "";
  const rvText = q.get("resourceVersion") ?? "";
  if (cont !== "" && rvText !== "") {
    throw new StatusError(
      failureStatus(400, "specifying resource version is not allowed when using continue"),
    );
  }
  if (rvText !== "" && !/^\d+$/.test(rvText)) {
    throw new StatusError(failureStatus(400, `Invalid resourceVersion "${rvText}"`));
  }
  const limitText = q.get("limit");
  let limit = limitText !== null && /^\d+$/.test(limitText) ? Number(limitText) : 0;
  const token = cont !== "" ? decodeContinue(cont) : undefined;
  if (token !== undefined && token.rv < store.oldestWatchable) {
    throw expired(
      "The provided continue parameter is too old to display a consistent list result. " +
        "You can start a new list without the continue parameter.",
    );
  }
  if (rvText !== "" && rvText !== "0") {
    const rv = Number(rvText);
    if (rv > store.revision) {
      throw new StatusError(
        failureStatus(
          504,
          `Timeout: Too large resource version: ${rv}, current: ${store.revision}`,
          {
            causes: [{
              reason: "ResourceVersionTooLarge",
              message: "Too large resource version",
              field: "",
            }],
            retryAfterSeconds: 1,
          },
        ),
      );
    }
    if (limit > 0 && rv < store.oldestWatchable) {
      throw expired(`The resourceVersion for the provided list is too old.`);
    }
  }
  if (rvText === "0" && !settings.pageWatchCacheLists) limit = 0;
  const all = store.list(request.kind).filter((o) =>
    request.matching(o) && (token === undefined || keyOf(o) > token.start)
  );
  const items = limit > 0 ? all.slice(0, limit) : all;
  const rv = token?.rv ?? store.revision;
  const metadata: Record<string, unknown> = { resourceVersion: String(rv) };
  if (all.length > items.length) {
    metadata.continue = encodeContinue({ rv, start: keyOf(items[items.length - 1]) });
    if (request.countRemaining) metadata.remainingItemCount = all.length - items.length;
  }
  return { metadata, items };
}
