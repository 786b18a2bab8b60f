/**
 * The time seam: everything that waits or reads the time goes through a Clock, so loops such as
 * the sync runner can be tested as a timeline with a fake clock instead of real sleeps.
 */

/** Opaque id of a pending timer, as returned by `Clock.setTimeout`. */
export type TimerHandle = number;

/** Wall-clock time and one-shot timers, injected so tests can control time. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
  /** Calls `fn` once after `ms` milliseconds; the handle cancels it. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a pending timer; unknown or already-fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/** Longest delay the runtime's setTimeout honours; longer ones would fire at once. */
const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/**
 * The real clock: Date.now() and the runtime's timers. Deno 2 returns a Node-style Timeout
 * object, which converts to its numeric id; clearTimeout accepts that id. Over-long delays are
 * clamped, so such a timer fires early rather than at once; callers re-check the time.
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => Number(setTimeout(fn, Math.min(ms, MAX_TIMER_DELAY_MS))),
  clearTimeout: (handle) => clearTimeout(handle),
};
