/**
 * A manual clock for timeline tests. Time only moves when a test calls `advance`, which fires
 * pending timers in time order and lets the promise work they start settle before moving on.
 */
import type { Clock, TimerHandle } from "../../lib/sync/mod.ts";

interface PendingTimer {
  readonly id: TimerHandle;
  readonly due: number;
  readonly fn: () => void;
}

/** Options for FakeClock. */
export interface FakeClockOptions {
  /** Initial value of now(), in ms since the epoch. */
  readonly startMs?: number;
  /**
   * Microtask turns granted after each fired timer (see `flush`). Each `await` in the code under
   * test costs one to three turns, so the default settles chains a few dozen awaits deep.
   */
  readonly flushTurns?: number;
}

/** Fired timers per `advance` before we assume a zero-delay timer loop and give up. */
const MAX_FIRES_PER_ADVANCE = 10_000;

/**
 * A Clock whose time is moved by the test. Settling uses only microtask turns (no real timers),
 * so tests stay deterministic and Deno's op sanitizer sees nothing.
 */
export class FakeClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers: PendingTimer[] = [];
  readonly #flushTurns: number;

  constructor(options: FakeClockOptions = {}) {
    this.#now = options.startMs ?? 0;
    this.#flushTurns = options.flushTurns ?? 100;
  }

  /** Current fake time in ms. */
  now(): number {
    return this.#now;
  }

  /** Queues `fn` to fire when fake time reaches now + ms (negative or NaN delays mean 0). */
  setTimeout(fn: () => void, ms: number): TimerHandle {
    const id = this.#nextId++;
    const delay = Number.isFinite(ms) && ms > 0 ? ms : 0;
    this.#timers.push({ id, due: this.#now + delay, fn });
    return id;
  }

  /** Drops a pending timer; unknown handles are ignored like the real clearTimeout. */
  clearTimeout(handle: TimerHandle): void {
    this.#timers = this.#timers.filter((t) => t.id !== handle);
  }

  /** How many timers are waiting; a stopped component should leave zero behind. */
  get pendingTimers(): number {
    return this.#timers.length;
  }

  /** When the earliest pending timer fires, or undefined when none is pending. */
  nextTimerAt(): number | undefined {
    return this.#next()?.due;
  }

  /** A promise resolved after `ms` of fake time; lets a test's fn "take" time. */
  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => this.setTimeout(resolve, ms));
  }

  /**
   * Moves time forward by `ms`, firing every timer that falls due on the way in (due, creation)
   * order with now() set to its due time, then settling promises after each one. Timers created
   * by fired callbacks fire too if they fall inside the window.
   */
  async advance(ms: number): Promise<void> {
    if (!(ms >= 0)) throw new RangeError(`Invalid advance "${ms}": expected a non-negative number`);
    const target = this.#now + ms;
    await this.flush();
    for (let fired = 0;; fired++) {
      const next = this.#next();
      if (next === undefined || next.due > target) break;
      if (fired >= MAX_FIRES_PER_ADVANCE) {
        throw new Error(`FakeClock fired "${fired}" timers in one advance: expected no timer loop`);
      }
      this.#timers = this.#timers.filter((t) => t !== next);
      this.#now = next.due;
      next.fn();
      await this.flush();
    }
    this.#now = target;
    await this.flush();
  }

  /**
   * Lets pending promise continuations run by yielding a fixed number of microtask turns. This
   * avoids real timers (a macrotask would be simpler but is a real sleep and leaks into the
   * sanitizers); the cost is that a chain deeper than `flushTurns` awaits needs another flush.
   */
  async flush(): Promise<void> {
    for (let i = 0; i < this.#flushTurns; i++) await Promise.resolve();
  }

  #next(): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const t of this.#timers) {
      if (best === undefined || t.due < best.due || (t.due === best.due && t.id < best.id)) {
        best = t;
      }
    }
    return best;
  }
}
