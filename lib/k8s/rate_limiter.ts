/**
 * clientConnection.qps / burst: a token bucket every request waits on, like client-go's
 * client-side rate limiter. Time comes from the Clock seam.
 */
import { type Clock, systemClock } from "../sync/mod.ts";

/** Something a request waits on before it is sent. */
export interface RequestLimiter {
  /** Resolves when a request may go out (at once when aborted). */
  wait(signal?: AbortSignal): Promise<void>;
}

/** A limiter that never waits (qps <= 0). */
export const unlimited: RequestLimiter = { wait: () => Promise.resolve() };

/** Options of createTokenBucket. */
export interface TokenBucketOptions {
  /** Sustained requests per second; <= 0 disables limiting. */
  readonly qps: number;
  /** Requests allowed at once before the rate applies (at least 1). */
  readonly burst: number;
  readonly clock?: Clock;
}

/** A token bucket holding up to `burst` tokens, refilled at `qps` per second. */
export function createTokenBucket(options: TokenBucketOptions): RequestLimiter {
  if (!(options.qps > 0)) return unlimited;
  const clock = options.clock ?? systemClock;
  const capacity = Math.max(1, Math.floor(options.burst));
  const perTokenMs = 1000 / options.qps;
  let tokens = capacity;
  let last = clock.now();

  return {
    wait(signal?: AbortSignal): Promise<void> {
      const now = clock.now();
      tokens = Math.min(capacity, tokens + (now - last) / perTokenMs);
      last = now;
      tokens -= 1;
      if (tokens >= 0) return Promise.resolve();
      // A borrowed token: wait until the bucket has refilled up to it (callers queue in order).
      const delay = -tokens * perTokenMs;
      return new Promise((resolve) => {
        if (signal?.aborted) return resolve();
        const onAbort = () => {
          clock.clearTimeout(timer);
          resolve();
        };
        const timer = clock.setTimeout(() => {
          signal?.removeEventListener("abort", onAbort);
          resolve();
        }, delay);
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    },
  };
}
