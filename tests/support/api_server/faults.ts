/** Injected HTTP failures and the request log tests assert on. */

/** Which requests a fault or a count applies to; every given field must match. */
export interface RequestMatch {
  /** "list", "watch", "get", "create", "update", "patch", "delete", or "discovery". */
  readonly verb?: string;
  /** Plural resource, e.g. "services". */
  readonly resource?: string;
  /** HTTP status of the answer (counts only). */
  readonly status?: number;
}

/** One request as the server answered it. */
export interface RequestRecord {
  /** Date.now() when the request arrived. */
  readonly time: number;
  readonly method: string;
  /** Path and query as sent. */
  readonly url: string;
  readonly verb: string;
  readonly resource?: string;
  /** The authenticated user, if any. */
  readonly user?: string;
  /** HTTP status sent (200 for a watch that started, 0 for an injected hang). */
  status: number;
  /** The Accept header, when the request had one. */
  readonly accept?: string;
}

/**
 * An answer given as it was captured from a real kube-apiserver (tests/k8s/fixtures), in place
 * of the one the server would make: its bytes, sent with `contentType`.
 */
export interface CapturedAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: Uint8Array;
  /** Only requests matching this get it (default: any resource request). */
  readonly match?: RequestMatch;
}

/** Options of `failNext`. */
export interface FailOptions {
  /** Sent as the Retry-After header and in the Status details (e.g. with 429). */
  readonly retryAfterSeconds?: number;
  /** Only requests matching this fail (default: any resource request). */
  readonly match?: RequestMatch;
  /** Status message (default: a generic one per code). */
  readonly message?: string;
}

interface PendingFault {
  remaining: number;
  readonly status: number;
  readonly opts: FailOptions;
}

/** True when `r` satisfies every field of `m`. */
export function requestMatches(r: RequestRecord, m: RequestMatch): boolean {
  return (m.verb === undefined || m.verb === r.verb) &&
    (m.resource === undefined || m.resource === r.resource) &&
    (m.status === undefined || m.status === r.status);
}

/** Queue of injected failures plus the log of requests. */
export class Faults {
  readonly #pending: PendingFault[] = [];
  readonly #captured: CapturedAnswer[] = [];
  readonly log: RequestRecord[] = [];

  /** The next `n` matching requests fail with `status`. */
  failNext(n: number, status: number, opts: FailOptions = {}): void {
    this.#pending.push({ remaining: n, status, opts });
  }

  /** The next matching request gets `answer` instead of the server's own. */
  answerNext(answer: CapturedAnswer): void {
    this.#captured.push(answer);
  }

  /** Drops every pending injected failure and captured answer. */
  clear(): void {
    this.#pending.length = 0;
    this.#captured.length = 0;
  }

  /** The captured answer for this request, consumed. */
  takeAnswer(r: RequestRecord): CapturedAnswer | undefined {
    if (r.resource === undefined) return undefined;
    const i = this.#captured.findIndex((a) => requestMatches(r, a.match ?? {}));
    return i < 0 ? undefined : this.#captured.splice(i, 1)[0];
  }

  /** The fault that applies to this request, consuming one use of it. */
  take(r: RequestRecord): { status: number; opts: FailOptions } | undefined {
    if (r.resource === undefined) return undefined;
    const f = this.#pending.find((p) => p.remaining > 0 && requestMatches(r, p.opts.match ?? {}));
    if (f === undefined) return undefined;
    f.remaining--;
    if (f.remaining === 0) this.#pending.splice(this.#pending.indexOf(f), 1);
    return { status: f.status, opts: f.opts };
  }
}
