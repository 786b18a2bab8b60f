/**
 * One GET of a list page for the reflector, bounded in time, and the error a non-2xx answer
 * (of a list or a watch) turns into.
 */
import type { Clock } from "../sync/mod.ts";
import {
  ApiConnectionError,
  type ApiStatusError,
  parseRetryAfter,
  parseStatus,
  statusError,
} from "./_api_errors.ts";
import { type ListPageOptions, listQuery, type ResourceSpec } from "./resources.ts";
import type { ApiResponse, ApiTransport } from "./transport.ts";
import { type ListText, splitListText } from "./_list_items.ts";

/** Turns a non-2xx response into the matching error (Retry-After honoured). */
export async function responseFailure(
  response: ApiResponse,
  context: string,
  clock: Clock,
): Promise<ApiStatusError> {
  const text = await response.text().catch(() => "");
  const retryAfter = parseRetryAfter(response.headers["retry-after"], clock.now());
  return statusError(context, response.status, parseStatus(text), retryAfter);
}

/** What fetchListPage needs. */
export interface ListPageRequest {
  readonly transport: ApiTransport;
  readonly resource: ResourceSpec;
  readonly clock: Clock;
  /** Abandon the page (ApiConnectionError) after this long. */
  readonly timeoutMs: number;
  /** Plural kind for messages, e.g. "Services". */
  readonly label: string;
  readonly signal: AbortSignal;
  readonly page: ListPageOptions;
}

/**
 * Fetches one list page and splits it into its items (decoded one at a time by the caller);
 * throws the API's error, ApiConnectionError, or SyntaxError for an answer that is not JSON.
 */
export async function fetchListPage(req: ListPageRequest): Promise<ListText> {
  const { clock, signal, label } = req;
  const controller = new AbortController();
  const stop = () => controller.abort();
  signal.addEventListener("abort", stop, { once: true });
  let timedOut = false;
  const timer = clock.setTimeout(() => {
    timedOut = true;
    controller.abort();
  }, req.timeoutMs);
  let response: ApiResponse | undefined;
  try {
    response = await req.transport.request({
      method: "GET",
      path: req.resource.path,
      query: listQuery(req.resource, req.page),
      signal: controller.signal,
    });
    if (response.status !== 200) {
      throw await responseFailure(response, `Cannot list ${label}`, clock);
    }
    return splitListText(await response.text());
  } catch (err) {
    if (timedOut) {
      throw new ApiConnectionError(`Cannot list ${label}: no answer within ${req.timeoutMs} ms`);
    }
    throw err;
  } finally {
    clock.clearTimeout(timer);
    signal.removeEventListener("abort", stop);
    await response?.close();
  }
}
