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
import { ApiStatusError, isNotServedError, needsRelist } from "./_api_errors.ts";
import { Backoff, type BackoffOptions } from "./_backoff.ts";
import { objectKey } from "./_relist_diff.ts";
import { stripManagedFields } from "./_strip_managed_fields.ts";
import { fetchListPage } from "./_list_page.ts";
import { listsInProtobuf } from "./_list_protobuf.ts";
import { type ResourceSpec, watchTimeoutSeconds } from "./resources.ts";
import type { ApiTransport } from "./transport.ts";
import type { KubeObject, WatchEvent } from "./watch_lines.ts";
import { type WatchEnd, watchOnce } from "./_watch_stream.ts";
import { ReflectorStore } from "./_reflector_store.ts";

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
  /**
   * Ask for lists in protobuf, as upstream's default content type does, where the kind can be
   * read in it (Services, EndpointSlices: lib/k8s/_list_protobuf.ts); JSON stays acceptable.
   * Watches are JSON. Default true.
   */
  readonly protobufLists?: boolean;
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

/** Creates the loop; nothing happens until start(). */
export function createReflector(options: ReflectorOptions): Reflector {
  return new ListWatchReflector(options);
}

/** The list+watch loop of one kind, with what it has seen (client-go's Reflector and its store). */
class ListWatchReflector implements Reflector {
  readonly #options: ReflectorOptions;
  readonly #resource: ResourceSpec;
  readonly #transport: ApiTransport;
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #pageSize: number;
  readonly #idleTimeoutMs: number;
  readonly #minWatchTimeout: number;
  readonly #listTimeoutMs: number;
  readonly #backoff: Backoff;
  /** The collection's name in messages ("Services"). */
  readonly #label: string;
  readonly #stats: ReflectorStats = {
    lists: 0,
    watches: 0,
    changes: 0,
    malformedLines: 0,
    idleTimeouts: 0,
    expired: 0,
    errors: 0,
    handlerErrors: 0,
  };
  /** The objects handed on so far, by resourceVersion. */
  readonly #store: ReflectorStore;
  /** The resourceVersion the next watch starts from ("" before the first list). */
  #lastRV = "";
  /** onSynced was called. */
  #synced = false;
  /** The last list failed with 410 or a too-large RV: the next list is a consistent read. */
  #lastRVUnavailable = false;
  /** The server paged a resourceVersion=0 list, so it honours limit on every list. */
  #paginatedResult = false;
  #started = false;

  constructor(options: ReflectorOptions) {
    this.#options = options;
    this.#resource = options.resource;
    this.#transport = options.transport;
    this.#logger = options.logger ?? silentLogger;
    this.#clock = options.clock ?? systemClock;
    this.#random = options.random ?? Math.random;
    this.#pageSize = options.pageSize ?? 500;
    this.#idleTimeoutMs = options.idleTimeoutMs ?? 150_000;
    this.#minWatchTimeout = options.minWatchTimeoutSeconds ?? 300;
    this.#listTimeoutMs = options.listTimeoutMs ?? 60_000;
    this.#backoff = new Backoff(options.backoff);
    this.#label = `${options.resource.kind}s`;
    this.#store = new ReflectorStore({
      kind: options.resource.kind,
      onChange: options.onChange,
      onHandlerError: options.onHandlerError,
      logger: this.#logger,
      stats: this.#stats,
    });
  }

  start(signal: AbortSignal): Promise<void> {
    if (this.#started) {
      return Promise.reject(new Error(`The ${this.#resource.kind} reflector was already started`));
    }
    this.#started = true;
    return this.#run(signal);
  }

  stats(): Readonly<ReflectorStats> {
    return { ...this.#stats };
  }

  resourceVersion(): string {
    return this.#lastRV;
  }

  versions(): ReadonlyMap<string, string> {
    return this.#store.versions;
  }

  /** Lists, then watches, until `signal` aborts; relists when told to, backs off on errors. */
  async #run(signal: AbortSignal): Promise<void> {
    const logger = this.#logger;
    const resource = this.#resource;
    const backoff = this.#backoff;
    let needList = true;
    while (!signal.aborted) {
      let delay = 0;
      const listing = needList;
      try {
        if (needList) {
          await this.#list(signal);
          needList = false;
          backoff.reset();
          continue;
        }
        const { end, delivered } = await this.#watch(signal);
        if (delivered > 0) backoff.reset();
        if (end === "idle") {
          this.#stats.idleTimeouts++;
          logger.info("Watch received nothing within the idle timeout; watching again", {
            kind: resource.kind,
            idleTimeoutMs: this.#idleTimeoutMs,
            resourceVersion: this.#lastRV,
          });
        } else if (end === "malformed" || delivered === 0) delay = backoff.next();
      } catch (err) {
        if (signal.aborted) break;
        if (listing && this.#notServed(err)) return;
        if (needsRelist(err)) {
          this.#stats.expired++;
          needList = true;
          logger.info("Resource version expired; listing again", {
            kind: resource.kind,
            resourceVersion: this.#lastRV,
            reason: errorMessage(err),
          });
          if (listing) delay = backoff.next();
        } else delay = this.#failed(err, listing);
      }
      if (delay > 0) await sleep(this.#clock, delay, signal);
    }
  }

  /**
   * An optional kind the server does not serve us, before its first list: counts as synced, and
   * the loop ends (true).
   */
  #notServed(err: unknown): boolean {
    if (this.#synced || this.#resource.optional !== true || !isNotServedError(err)) return false;
    this.#logger.warn(`The API server does not serve ${this.#label} to us; going on without them`, {
      server: this.#transport.server,
      path: this.#resource.path,
      status: (err as ApiStatusError).status,
    });
    this.#synced = true;
    this.#options.onSynced();
    return true;
  }

  /** Counts and logs a failed list or watch; returns how long to wait (Retry-After first). */
  #failed(err: unknown, listing: boolean): number {
    this.#stats.errors++;
    const retryAfter = err instanceof ApiStatusError ? err.retryAfterMs : undefined;
    const delay = retryAfter ?? this.#backoff.next();
    if (retryAfter !== undefined) this.#backoff.next(); // keep growing if it happens again
    const label = this.#label;
    this.#logger.error(
      listing ? `Cannot list ${label}; retrying` : `Watch of ${label} failed; retrying`,
      {
        server: this.#transport.server,
        reason: errorMessage(err),
        retryInMs: delay,
      },
    );
    return delay;
  }

  /** client-go's relistResourceVersion: "0" first, then the last seen RV, "" after a 410. */
  #relistResourceVersion(): string {
    if (this.#lastRVUnavailable) return "";
    return this.#lastRV === "" ? "0" : this.#lastRV;
  }

  /**
   * client-go's page size choice: a server that paged before is asked in pages again; a list
   * from a given RV is asked whole, so a watch-cache server can answer it without etcd.
   */
  #listLimit(resourceVersion: string): number {
    if (this.#paginatedResult) return this.#pageSize;
    if (resourceVersion !== "" && resourceVersion !== "0") return 0;
    return this.#pageSize;
  }

  /**
   * Lists the collection (following continue tokens) and hands on each listed object as it is
   * decoded, unless it is the version already seen; once the list is complete, hands on the
   * objects it no longer has as deletions. A list that fails half way has handed on, and
   * cached, only whole objects, so the next list picks up where it stopped.
   */
  async #list(signal: AbortSignal): Promise<void> {
    const logger = this.#logger;
    const resource = this.#resource;
    const label = this.#label;
    const listed = new Set<string>();
    const changesBefore = this.#stats.changes;
    const askedRV = this.#relistResourceVersion();
    const limit = this.#listLimit(askedRV);
    let continueToken = "";
    let resourceVersion = "";
    let pages = 0;
    do {
      let page;
      try {
        page = await fetchListPage({
          transport: this.#transport,
          resource,
          clock: this.#clock,
          timeoutMs: this.#listTimeoutMs,
          label,
          signal,
          page: { limit, continueToken, resourceVersion: askedRV },
          protobuf: (this.#options.protobufLists ?? true) && listsInProtobuf(resource.kind),
        });
      } catch (err) {
        // client-go: a list that hit 410 or a too-large RV is retried as a consistent read.
        if (needsRelist(err)) this.#lastRVUnavailable = true;
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
          // The split already left out a managedFields array or object; this drops any other.
          const object = stripManagedFields(item);
          listed.add(objectKey(object));
          this.#store.apply("ADDED", object);
        } else logger.warn("Skipping a listed object without a name", { kind: resource.kind });
      }
      const meta = (rest.metadata ?? {}) as { continue?: unknown; resourceVersion?: unknown };
      continueToken = typeof meta.continue === "string" ? meta.continue : "";
      resourceVersion = typeof meta.resourceVersion === "string" ? meta.resourceVersion : "";
    } while (continueToken !== "" && !signal.aborted);
    if (signal.aborted) return;
    if (askedRV === "0" && pages > 1) this.#paginatedResult = true;
    this.#lastRVUnavailable = false;
    this.#store.deleteUnlisted(listed);
    this.#lastRV = resourceVersion;
    this.#stats.lists++;
    logger.debug(2, "Listed objects", {
      kind: resource.kind,
      objects: this.#store.size,
      changes: this.#stats.changes - changesBefore,
      resourceVersion,
      pages,
    });
    if (!this.#synced) {
      this.#synced = true;
      this.#options.onSynced();
    }
    this.#options.onListed?.();
  }

  /** One watch from the last resourceVersion seen (see watchOnce). */
  #watch(signal: AbortSignal): Promise<{ end: WatchEnd; delivered: number }> {
    return watchOnce({
      transport: this.#transport,
      resource: this.#resource,
      label: this.#label,
      clock: this.#clock,
      logger: this.#logger,
      idleTimeoutMs: this.#idleTimeoutMs,
      resourceVersion: this.#lastRV,
      timeoutSeconds: watchTimeoutSeconds(this.#minWatchTimeout, this.#random),
      opened: () => {
        this.#stats.watches++;
      },
      event: (event) => this.#watched(event),
      malformed: (line, reason) => {
        this.#stats.malformedLines++;
        this.#logger.error("Malformed watch event; watching again from the last resourceVersion", {
          kind: this.#resource.kind,
          reason,
          line: line.length > 200 ? `${line.slice(0, 200)}...` : line,
          resourceVersion: this.#lastRV,
        });
      },
    }, signal);
  }

  /** Applies one watch event; the next watch resumes after its resourceVersion. */
  #watched(event: Exclude<WatchEvent, { type: "ERROR" }>): void {
    if (event.type !== "BOOKMARK") this.#store.apply(event.type, stripManagedFields(event.object));
    const rv = event.object.metadata?.resourceVersion;
    if (typeof rv === "string" && rv !== "") this.#lastRV = rv;
  }
}
