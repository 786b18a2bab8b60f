/**
 * The list+watch loop for one kind (client-go's Reflector, thinly): list (first with
 * resourceVersion=0, which kube-apiserver answers whole from its watch cache; following continue
 * tokens when the server pages anyway), then watch from the list's resourceVersion with bookmarks and a randomised server-side timeout; resume
 * every new watch from the last resourceVersion seen; relist on 410 and diff against the resourceVersions seen;
 * back off with jitter on errors (Retry-After first); notice a silent connection with an idle
 * timeout; count and skip past a malformed line by rewatching. Never throws; stops on abort.
 *
 * Why not client-node's informer (makeInformer/ListWatch, 2.0.1): tried against the same faults
 * under Deno it never notices a cut, stalled or restarted watch (no event, no error),
 * by its code stops for good on any other error (no backoff, no Retry-After), asks for no
 * bookmarks or server-side timeout, and drops a malformed line silently.
 */
import type { Logger } from "../log/mod.ts";
import { errorMessage, silentLogger } from "../log/mod.ts";
import type { EventType } from "../source/mod.ts";
import { type Clock, sleep, systemClock } from "../sync/mod.ts";
import { ApiStatusError, isNotServedError, needsRelist, statusError } from "./api_errors.ts";
import { Backoff, type BackoffOptions } from "./backoff.ts";
import { deletedStub, objectKey, sameVersion, unlistedKeys, versionOf } from "./relist_diff.ts";
import { stripManagedFields } from "./strip_managed_fields.ts";
import { fetchListPage, responseFailure } from "./list_page.ts";
import { type ResourceSpec, watchQuery, watchTimeoutSeconds } from "./resources.ts";
import type { ApiResponse, ApiTransport } from "./transport.ts";
import { decodeWatchLine, type KubeObject, LineSplitter } from "./watch_lines.ts";

/** Counters of one reflector, for logs, tests and the soak script. */
export interface ReflectorStats {
  /** Complete lists (the first one included). */
  lists: number;
  /** Watch requests the server accepted. */
  watches: number;
  /** Changes handed to onChange. */
  changes: number;
  /** Watch lines that could not be decoded. */
  malformedLines: number;
  /** Watches abandoned because nothing arrived within the idle timeout. */
  idleTimeouts: number;
  /** Relists forced by 410 Gone or a too-large resourceVersion. */
  expired: number;
  /** Failed requests and ERROR events (410 excluded). */
  errors: number;
  /** Changes the handler threw on. */
  handlerErrors: number;
}

/** The version kept for an object whose change the handler threw on: never the same as any. */
const UNSEEN = "";

/** Options of createReflector. */
export interface ReflectorOptions {
  readonly resource: ResourceSpec;
  readonly transport: ApiTransport;
  /** Receives each real change of the collection. */
  readonly onChange: (type: EventType, object: KubeObject) => void;
  /** Called once, after the first complete list has been delivered. */
  readonly onSynced: () => void;
  /** Called after every complete list (the first one and each relist) has been delivered. */
  readonly onListed?: () => void;
  readonly logger?: Logger;
  /** Told of each change onChange threw on (besides the error log). */
  readonly onHandlerError?: (err: unknown) => void;
  readonly clock?: Clock;
  /** [0, 1) source for the watch timeout; the backoff has its own in `backoff.random`. */
  readonly random?: () => number;
  readonly backoff?: BackoffOptions;
  /**
   * Objects per list page (limit/continue), as client-go's pager asks. A server answering a
   * resourceVersion=0 list from its watch cache ignores it. Default 500.
   */
  readonly pageSize?: number;
  /** A watch that receives no byte (bookmarks included) for this long is dropped. Default 150 s. */
  readonly idleTimeoutMs?: number;
  /** Server-side watch timeout is this to twice this, at random. Default 300 s. */
  readonly minWatchTimeoutSeconds?: number;
  /** A list page that has not fully arrived after this long is abandoned. Default 60 s. */
  readonly listTimeoutMs?: number;
}

/** A running (or startable) list+watch loop. */
export interface Reflector {
  /** Runs until `signal` aborts; resolves once no request or timer is left. */
  start(signal: AbortSignal): Promise<void>;
  /** The counters so far. */
  stats(): Readonly<ReflectorStats>;
  /** The resourceVersion the next watch would start from ("" before the first list). */
  resourceVersion(): string;
  /** The resourceVersion of each object as last seen, by "namespace/name". */
  versions(): ReadonlyMap<string, string>;
}

/** How a watch that opened came to an end. */
type WatchEnd = "ended" | "idle" | "malformed";

/** Creates the loop; nothing happens until start(). */
export function createReflector(options: ReflectorOptions): Reflector {
  const { resource, transport } = options;
  const logger = options.logger ?? silentLogger;
  const clock = options.clock ?? systemClock;
  const random = options.random ?? Math.random;
  const pageSize = options.pageSize ?? 500;
  const idleTimeoutMs = options.idleTimeoutMs ?? 150_000;
  const minWatchTimeout = options.minWatchTimeoutSeconds ?? 300;
  const listTimeoutMs = options.listTimeoutMs ?? 60_000;
  const backoff = new Backoff(options.backoff);
  const label = `${resource.kind}s`;
  const stats: ReflectorStats = {
    lists: 0,
    watches: 0,
    changes: 0,
    malformedLines: 0,
    idleTimeouts: 0,
    expired: 0,
    errors: 0,
    handlerErrors: 0,
  };
  const cache = new Map<string, string>();
  let lastRV = "";
  let synced = false;
  /** The last list failed with 410 or a too-large RV: the next list is a consistent read. */
  let lastRVUnavailable = false;
  /** The server paged a resourceVersion=0 list, so it honours limit on every list. */
  let paginatedResult = false;

  /** client-go's relistResourceVersion: "0" first, then the last seen RV, "" after a 410. */
  function relistResourceVersion(): string {
    if (lastRVUnavailable) return "";
    return lastRV === "" ? "0" : lastRV;
  }

  /**
   * client-go's page size choice: a server that paged before is asked in pages again; a list
   * from a given RV is asked whole, so a watch-cache server can answer it without etcd.
   */
  function listLimit(resourceVersion: string): number {
    if (paginatedResult) return pageSize;
    if (resourceVersion !== "" && resourceVersion !== "0") return 0;
    return pageSize;
  }

  /**
   * Hands on one change; false when the handler threw, which is logged, counted, and leaves the
   * caller to make the next list hand the object on again.
   */
  function emit(type: EventType, object: KubeObject): boolean {
    stats.changes++;
    try {
      options.onChange(type, object);
      return true;
    } catch (err) {
      stats.handlerErrors++;
      logger.error("Event handler failed; the object is handed on again at the next list", {
        kind: resource.kind,
        type,
        object: objectKey(object),
        reason: errorMessage(err),
      });
      options.onHandlerError?.(err);
      return false;
    }
  }

  /**
   * Lists the collection (following continue tokens) and hands on each listed object as it is
   * decoded, unless it is the version already seen; once the list is complete, hands on the
   * objects it no longer has as deletions. A list that fails half way has handed on, and
   * cached, only whole objects, so the next list picks up where it stopped.
   */
  async function list(signal: AbortSignal): Promise<void> {
    const listed = new Set<string>();
    const changesBefore = stats.changes;
    const askedRV = relistResourceVersion();
    const limit = listLimit(askedRV);
    let continueToken = "";
    let resourceVersion = "";
    let pages = 0;
    do {
      let page;
      try {
        page = await fetchListPage({
          transport,
          resource,
          clock,
          timeoutMs: listTimeoutMs,
          label,
          signal,
          page: { limit, continueToken, resourceVersion: askedRV },
        });
      } catch (err) {
        // client-go: a list that hit 410 or a too-large RV is retried as a consistent read.
        if (needsRelist(err)) lastRVUnavailable = true;
        throw err;
      }
      pages++;
      const { rest } = page;
      if (!Array.isArray(rest?.items)) {
        throw new Error(`Cannot list ${label}: the answer has no "items" array`);
      }
      for (let i = 0; i < page.count && !signal.aborted; i++) {
        const item = page.item(i) as KubeObject;
        if (typeof item?.metadata?.name === "string" && item.metadata.name !== "") {
          const object = stripManagedFields(item);
          listed.add(objectKey(object));
          apply("ADDED", object);
        } else logger.warn("Skipping a listed object without a name", { kind: resource.kind });
      }
      const meta = (rest.metadata ?? {}) as { continue?: unknown; resourceVersion?: unknown };
      continueToken = typeof meta.continue === "string" ? meta.continue : "";
      resourceVersion = typeof meta.resourceVersion === "string" ? meta.resourceVersion : "";
    } while (continueToken !== "" && !signal.aborted);
    if (signal.aborted) return;
    if (askedRV === "0" && pages > 1) paginatedResult = true;
    lastRVUnavailable = false;
    for (const key of unlistedKeys(cache, listed)) {
      const stub = deletedStub(key, cache.get(key)!);
      cache.delete(key);
      if (!emit("DELETED", stub)) cache.set(key, UNSEEN);
    }
    lastRV = resourceVersion;
    stats.lists++;
    logger.debug(2, "Listed objects", {
      kind: resource.kind,
      objects: cache.size,
      changes: stats.changes - changesBefore,
      resourceVersion,
      pages,
    });
    if (!synced) {
      synced = true;
      options.onSynced();
    }
    options.onListed?.();
  }

  /** Applies one object event to the cache; emits it unless it is the version already seen. */
  function apply(type: "ADDED" | "MODIFIED" | "DELETED", object: KubeObject): void {
    const key = objectKey(object);
    const old = cache.get(key);
    if (type === "DELETED") {
      if (old === undefined) return;
      cache.delete(key);
      // Still known, so the next list, not having it, hands the deletion on again.
      if (!emit("DELETED", object)) cache.set(key, UNSEEN);
      return;
    }
    cache.set(key, versionOf(object));
    let handled = true;
    if (old === undefined) handled = emit("ADDED", object);
    else if (!sameVersion(old, object)) handled = emit("MODIFIED", object);
    // No version counts as seen: the next list hands the object on again.
    if (!handled) cache.set(key, UNSEEN);
  }

  /** One watch from lastRV; returns how it ended, or throws for HTTP errors and ERROR events. */
  async function watch(signal: AbortSignal): Promise<{ end: WatchEnd; delivered: number }> {
    const controller = new AbortController();
    const stop = () => controller.abort();
    signal.addEventListener("abort", stop, { once: true });
    let idle = false;
    let timer: number | undefined;
    const arm = () => {
      if (timer !== undefined) clock.clearTimeout(timer);
      timer = clock.setTimeout(() => {
        idle = true;
        controller.abort();
      }, idleTimeoutMs);
    };
    let response: ApiResponse | undefined;
    let delivered = 0;
    try {
      arm(); // also bounds how long the server may take to answer
      response = await transport.request({
        method: "GET",
        path: resource.path,
        query: watchQuery(resource, lastRV, watchTimeoutSeconds(minWatchTimeout, random)),
        signal: controller.signal,
      });
      if (response.status !== 200) {
        throw await responseFailure(response, `Cannot watch ${label}`, clock);
      }
      stats.watches++;
      if (!response.body) return { end: "ended", delivered };
      arm();
      const reader = response.body.getReader();
      const splitter = new LineSplitter();
      try {
        while (true) {
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reader.read();
          } catch (err) {
            if (idle) return { end: "idle", delivered };
            if (signal.aborted) return { end: "ended", delivered };
            logger.debug(2, "Watch stream broke", {
              kind: resource.kind,
              reason: errorMessage(err),
            });
            return { end: "ended", delivered };
          }
          if (chunk.done) break;
          arm();
          for (const line of splitter.push(chunk.value)) {
            const decoded = decodeWatchLine(line);
            if (!decoded.ok) {
              stats.malformedLines++;
              logger.error("Malformed watch event; watching again from the last resourceVersion", {
                kind: resource.kind,
                reason: decoded.reason,
                line: line.length > 200 ? `${line.slice(0, 200)}...` : line,
                resourceVersion: lastRV,
              });
              return { end: "malformed", delivered };
            }
            const event = decoded.event;
            if (event.type === "ERROR") {
              throw statusError(`Watch of ${label} failed`, 0, event.object);
            }
            delivered++;
            if (event.type !== "BOOKMARK") apply(event.type, stripManagedFields(event.object));
            const rv = event.object.metadata?.resourceVersion;
            if (typeof rv === "string" && rv !== "") lastRV = rv;
          }
        }
        for (const rest of splitter.flush()) {
          logger.debug(2, "Watch stream ended mid-line", {
            kind: resource.kind,
            bytes: rest.length,
          });
        }
        return { end: "ended", delivered };
      } finally {
        reader.releaseLock();
      }
    } catch (err) {
      if (idle) return { end: "idle", delivered };
      throw err;
    } finally {
      if (timer !== undefined) clock.clearTimeout(timer);
      signal.removeEventListener("abort", stop);
      controller.abort();
      await response?.close();
    }
  }

  async function run(signal: AbortSignal): Promise<void> {
    let needList = true;
    while (!signal.aborted) {
      let delay = 0;
      const listing = needList;
      try {
        if (needList) {
          await list(signal);
          needList = false;
          backoff.reset();
          continue;
        }
        const { end, delivered } = await watch(signal);
        if (delivered > 0) backoff.reset();
        if (end === "idle") {
          stats.idleTimeouts++;
          logger.info("Watch received nothing within the idle timeout; watching again", {
            kind: resource.kind,
            idleTimeoutMs,
            resourceVersion: lastRV,
          });
        } else if (end === "malformed" || delivered === 0) delay = backoff.next();
      } catch (err) {
        if (signal.aborted) break;
        if (listing && !synced && resource.optional === true && isNotServedError(err)) {
          logger.warn(`The API server does not serve ${label} to us; going on without them`, {
            server: transport.server,
            path: resource.path,
            status: (err as ApiStatusError).status,
          });
          synced = true;
          options.onSynced();
          return;
        }
        if (needsRelist(err)) {
          stats.expired++;
          needList = true;
          logger.info("Resource version expired; listing again", {
            kind: resource.kind,
            resourceVersion: lastRV,
            reason: errorMessage(err),
          });
          if (listing) delay = backoff.next();
        } else {
          stats.errors++;
          const retryAfter = err instanceof ApiStatusError ? err.retryAfterMs : undefined;
          delay = retryAfter ?? backoff.next();
          if (retryAfter !== undefined) backoff.next(); // keep growing if it happens again
          logger.error(
            listing ? `Cannot list ${label}; retrying` : `Watch of ${label} failed; retrying`,
            {
              server: transport.server,
              reason: errorMessage(err),
              retryInMs: delay,
            },
          );
        }
      }
      if (delay > 0) await sleep(clock, delay, signal);
    }
  }

  let started = false;
  return {
    start(signal: AbortSignal): Promise<void> {
      if (started) {
        return Promise.reject(new Error(`The ${resource.kind} reflector was already started`));
      }
      started = true;
      return run(signal);
    },
    stats: () => ({ ...stats }),
    resourceVersion: () => lastRV,
    versions: () => cache,
  };
}
