/**
 * One watch request of a reflector: opens it, feeds each decoded line to the reflector in
 * order, and drops the connection when nothing (bookmarks included) arrives within the idle
 * timeout, which also bounds how long the server may take to answer.
 */
import { errorMessage, type Logger } from "../log/mod.ts";
import type { Clock } from "../sync/mod.ts";
import { statusError } from "./_api_errors.ts";
import { responseFailure } from "./_list_page.ts";
import { type ResourceSpec, watchQuery } from "./resources.ts";
import type { ApiResponse, ApiTransport } from "./transport.ts";
import { decodeWatchLine, LineSplitter, type WatchEvent } from "./watch_lines.ts";

/** How a watch that opened came to an end. */
export type WatchEnd = "ended" | "idle" | "malformed";

/** One watch to make, and the reflector's hands for what it brings. */
export interface WatchRequest {
  readonly transport: ApiTransport;
  readonly resource: ResourceSpec;
  /** The collection's name in messages ("Services"). */
  readonly label: string;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly idleTimeoutMs: number;
  /** Where the watch starts. */
  readonly resourceVersion: string;
  /** The server-side timeout asked for. */
  readonly timeoutSeconds: number;
  /** The server accepted the watch. */
  opened(): void;
  /** One decoded object or bookmark event, in the order the server sent them. */
  event(event: Exclude<WatchEvent, { type: "ERROR" }>): void;
  /** A line that could not be decoded; the watch ends "malformed" right after. */
  malformed(line: string, reason: string): void;
}

/**
 * Makes one watch; returns how it ended and how many events it delivered, or throws for HTTP
 * errors and ERROR events. Stops when `signal` aborts.
 */
export async function watchOnce(
  request: WatchRequest,
  signal: AbortSignal,
): Promise<{ end: WatchEnd; delivered: number }> {
  const { clock, logger, resource } = request;
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
    }, request.idleTimeoutMs);
  };
  let response: ApiResponse | undefined;
  let delivered = 0;
  try {
    arm(); // also bounds how long the server may take to answer
    response = await request.transport.request({
      method: "GET",
      path: resource.path,
      query: watchQuery(resource, request.resourceVersion, request.timeoutSeconds),
      signal: controller.signal,
    });
    if (response.status !== 200) {
      throw await responseFailure(response, `Cannot watch ${request.label}`, clock);
    }
    request.opened();
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
            request.malformed(line, decoded.reason);
            return { end: "malformed", delivered };
          }
          const event = decoded.event;
          if (event.type === "ERROR") {
            throw statusError(`Watch of ${request.label} failed`, 0, event.object);
          }
          delivered++;
          request.event(event);
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
