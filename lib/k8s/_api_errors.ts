/**
 * Errors of the API client, classified by HTTP status and Status cause (never by message text):
 * the watch loop branches on them to relist, back off, or honour Retry-After.
 */

/** The parts of a metav1.Status the client reads. */
export interface KubeStatus {
  readonly code?: number;
  readonly reason?: string;
  readonly message?: string;
  readonly details?: {
    readonly causes?: readonly { readonly reason?: string; readonly message?: string }[];
    readonly retryAfterSeconds?: number;
  };
}

/** The API server answered with an error status (HTTP status, or an ERROR watch event). */
export class ApiStatusError extends Error {
  /** HTTP status code (or the Status object's `code`). */
  readonly status: number;
  /** The Status `reason`, e.g. "Expired", "Unauthorized"; "" when the body had none. */
  readonly reason: string;
  /** The Status cause reasons, e.g. "ResourceVersionTooLarge". */
  readonly causes: readonly string[];
  /** How long the server asked us to wait (Retry-After header or retryAfterSeconds). */
  readonly retryAfterMs: number | undefined;

  constructor(
    message: string,
    status: number,
    reason = "",
    causes: readonly string[] = [],
    retryAfterMs?: number,
  ) {
    super(message);
    this.name = "ApiStatusError";
    this.status = status;
    this.reason = reason;
    this.causes = causes;
    this.retryAfterMs = retryAfterMs;
  }
}

/** HTTP 410 / ERROR 410: the resourceVersion we asked for is gone; the caller must relist. */
export class WatchExpiredError extends ApiStatusError {
  constructor(message: string, reason = "Expired", causes: readonly string[] = []) {
    super(message, 410, reason, causes);
    this.name = "WatchExpiredError";
  }
}

/** The request never got an HTTP answer (refused, reset, TLS failure, timeout). */
export class ApiConnectionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "ApiConnectionError";
  }
}

/**
 * Parses a Retry-After header: delay-seconds or an HTTP date. Returns milliseconds, or
 * undefined when absent or unreadable.
 */
export function parseRetryAfter(
  value: string | null | undefined,
  nowMs: number,
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - nowMs);
}

/** Reads a Status object out of an error body; undefined when it is not one. */
export function parseStatus(body: string): KubeStatus | undefined {
  try {
    const parsed: unknown = JSON.parse(body);
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed)) {
      return parsed as KubeStatus;
    }
  } catch {
    // not JSON
  }
  return undefined;
}

/**
 * Builds the error for a Status (from a failed response or an ERROR watch event): a
 * WatchExpiredError for 410, else an ApiStatusError. `context` says what was attempted.
 */
export function statusError(
  context: string,
  httpStatus: number,
  status: KubeStatus | undefined,
  retryAfterMs?: number,
): ApiStatusError {
  const code = typeof status?.code === "number" && status.code > 0 ? status.code : httpStatus;
  const reason = typeof status?.reason === "string" ? status.reason : "";
  const causes = (Array.isArray(status?.details?.causes) ? status.details.causes : [])
    .map((c) => (typeof c?.reason === "string" ? c.reason : ""))
    .filter((r) => r !== "");
  const serverSays = typeof status?.message === "string" && status.message !== ""
    ? status.message
    : reason || `HTTP ${code}`;
  const wait = retryAfterMs ??
    (typeof status?.details?.retryAfterSeconds === "number"
      ? status.details.retryAfterSeconds * 1000
      : undefined);
  const message = `${context}: ${describeStatus(code)}: ${serverSays}`;
  if (code === 410) return new WatchExpiredError(message, reason || "Expired", causes);
  return new ApiStatusError(message, code, reason, causes, wait);
}

/** A short human explanation of an HTTP status, pointing at the likely fix. */
export function describeStatus(code: number): string {
  switch (code) {
    case 401:
      return "the API server rejected our credentials (401 Unauthorized); check the token or " +
        "client certificate in the kubeconfig";
    case 403:
      return "the API server denied access (403 Forbidden); check the RBAC rules of the " +
        "kube-proxy user";
    case 410:
      return "the resource version is too old (410 Gone)";
    case 429:
      return "the API server is throttling us (429 Too Many Requests)";
    default:
      return `the API server answered HTTP ${code}`;
  }
}

/**
 * True when the error means our resourceVersion is unusable and only a fresh list helps:
 * 410 Gone, or "too large resource version" (a server whose history restarted below ours).
 */
export function needsRelist(err: unknown): boolean {
  if (err instanceof WatchExpiredError) return true;
  return err instanceof ApiStatusError &&
    (err.status === 410 || err.causes.includes("ResourceVersionTooLarge"));
}

/** A 404 (the server does not serve the resource) or 403 (we may not read it). */
export function isNotServedError(err: unknown): boolean {
  return err instanceof ApiStatusError && (err.status === 404 || err.status === 403);
}
