/** `Status` objects shaped like the real API server's error replies. */

/** A metav1.Status cause (field-level detail of a 422). */
export interface StatusCause {
  readonly reason: string;
  readonly message: string;
  readonly field: string;
}

/** A metav1.Status failure. */
export interface Status {
  readonly kind: "Status";
  readonly apiVersion: "v1";
  readonly metadata: Record<string, never>;
  readonly status: "Failure";
  readonly message: string;
  readonly reason: string;
  readonly code: number;
  readonly details?: {
    readonly name?: string;
    readonly kind?: string;
    readonly group?: string;
    readonly causes?: readonly StatusCause[];
    readonly retryAfterSeconds?: number;
  };
}

const REASONS: Readonly<Record<number, string>> = {
  400: "BadRequest",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  405: "MethodNotAllowed",
  409: "AlreadyExists",
  410: "Expired",
  422: "Invalid",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

/** Builds a failure Status with the reason the real server uses for `code`. */
export function failureStatus(
  code: number,
  message: string,
  details?: Status["details"],
): Status {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason: REASONS[code] ?? "Unknown",
    code,
    ...(details !== undefined ? { details } : {}),
  };
}

/** The Status a watch or list gets for a resourceVersion older than the kept history. */
export function expiredStatus(resourceVersion: string, oldest: number): Status {
  return failureStatus(
    410,
    `too old resource version: ${resourceVersion} (${oldest})`,
  );
}

/** Raised by the store for a rejected write; carries the Status to send back. */
export class StatusError extends Error {
  constructor(readonly status: Status) {
    super(status.message);
    this.name = "StatusError";
  }
}
