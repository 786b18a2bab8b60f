/** Abortable waiting on the Clock seam. */
import type { Clock } from "./clock.ts";

/** Waits `ms` on `clock`, or less if `signal` aborts; leaves no timer behind. */
export function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((done) => {
    if (signal.aborted) return done();
    const onAbort = () => {
      clock.clearTimeout(timer);
      done();
    };
    const timer = clock.setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      done();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
