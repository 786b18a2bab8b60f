/**
 * One GET of a list page for the reflector, bounded in time, and the error a non-2xx answer
 * (of a list or a watch) turns into.
 */
import type { Clock } from "../sync/mod.ts";
import {
  ApiConnectionError,
  type ApiStatusError,
  type KubeStatus,
  parseRetryAfter,
  parseStatus,
  statusError,
} from "./_api_errors.ts";
import { type ListPageOptions, listQuery, type ResourceSpec } from "./resources.ts";
import type { ApiResponse, ApiTransport } from "./transport.ts";
import { type ListText, splitListText } from "./_list_items.ts";
import { splitListProtobuf } from "./_list_protobuf.ts";
import { openEnvelope, PROTOBUF_MEDIA_TYPE, readStatus } from "./_protobuf_meta.ts";

/** The Accept header of a list that may come in protobuf: JSON stays acceptable. */
export const PROTOBUF_OR_JSON = `${PROTOBUF_MEDIA_TYPE}, application/json`;

/** True when the answer is in kube-apiserver's protobuf encoding. */
function isProtobuf(response: ApiResponse): boolean {
  return (response.headers["content-type"] ?? "").startsWith(PROTOBUF_MEDIA_TYPE);
}

/** The Status a failed answer carries, in either encoding; undefined when it has none. */
async function failureStatus(response: ApiResponse): Promise<KubeStatus | undefined> {
  if (!isProtobuf(response)) return parseStatus(await response.text().catch(() => ""));
  const bytes = await response.bytes().catch(() => new Uint8Array());
  try {
    return readStatus(openEnvelope(bytes).raw) as KubeStatus;
  } catch {
    return undefined; // not a Status: the HTTP code alone tells what failed
  }
}

/** Turns a non-2xx response into the matching error (Retry-After honoured). */
export async function responseFailure(
  response: ApiResponse,
  context: string,
  clock: Clock,
): Promise<ApiStatusError> {
  const status = await failureStatus(response);
  const retryAfter = parseRetryAfter(response.headers["retry-after"], clock.now());
  return statusError(context, response.status, status, retryAfter);
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
  /**
   * Ask for the list in protobuf (JSON still accepted); only for a kind _list_protobuf.ts can
   * read.
   */
  readonly protobuf?: boolean;
}

/**
 * Fetches one list page and splits it into its items (decoded one at a time by the caller);
 * throws the API's error, ApiConnectionError, or SyntaxError for an answer that is neither
 * JSON nor a protobuf list of the kind.
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
      ...(req.protobuf === true ? { accept: PROTOBUF_OR_JSON } : {}),
    });
    if (response.status !== 200) {
      throw await responseFailure(response, `Cannot list ${label}`, clock);
    }
    return isProtobuf(response)
      ? splitListProtobuf(await response.bytes(), req.resource.kind)
      : splitListText(await response.text());
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
