/**
 * Decides when the proxy re-syncs its rules: on demand, but never more often than a minimum
 * interval, at least once per maximum interval, and soon again after a failure (upstream's
 * pkg/util/async BoundedFrequencyRunner, reshaped for promises and an injected clock).
 */
import { createLogger, type Logger } from "../log/mod.ts";
import { type Clock, systemClock, type TimerHandle } from "./clock.ts";

/** Options for BoundedFrequencyRunner. */
export interface BoundedFrequencyRunnerOptions {
  /** Names the runner in logs and error messages. */
  readonly name: string;
  /** The work to run; never called concurrently with itself. A rejection triggers a retry. */
  readonly fn: () => Promise<void> | void;
  /** Minimum time between the starts of two runs (kube-proxy's --*-min-sync-period); may be 0. */
  readonly minIntervalMs: number;
  /** Longest time from the end of one run to the start of the next (--*-sync-period). */
  readonly maxIntervalMs: number;
  /**
   * First retry delay after a failed run; doubles per consecutive failure, capped at
   * maxRetryIntervalMs. Defaults to minIntervalMs, or 1s when that is 0.
   */
  readonly retryIntervalMs?: number;
  /**
   * Longest retry delay (default maxIntervalMs). kube-proxy retries a failed sync within its
   * syncPeriod even though periodic runs are only hourly.
   */
  readonly maxRetryIntervalMs?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

function checkInterval(runner: string, field: string, value: number, allowZero: boolean): void {
  if (!Number.isFinite(value) || value < 0 || (!allowZero && value === 0)) {
    const expected = allowZero ? "a non-negative" : "a positive";
    throw new RangeError(
      `Invalid ${field} "${value}" for runner "${runner}": expected ${expected} number of ms`,
    );
  }
}

/**
 * Runs `fn` on request with bounded frequency. `run()` bursts coalesce into one run; runs start
 * at least minIntervalMs apart (measured start to start); a request that arrives while fn runs
 * causes exactly one follow-up run; fn also runs when maxIntervalMs has passed since the last
 * run ended. Failed runs are logged and retried with exponential backoff (base retryIntervalMs,
 * capped at maxIntervalMs); a success resets the backoff. Nothing runs before `start(signal)`.
 */
export class BoundedFrequencyRunner {
  readonly #name: string;
  readonly #fn: () => Promise<void> | void;
  readonly #minIntervalMs: number;
  readonly #maxIntervalMs: number;
  readonly #retryIntervalMs: number;
  readonly #maxRetryIntervalMs: number;
  readonly #clock: Clock;
  readonly #logger: Logger;

  #started = false;
  #stopped = false;
  #startedAt = 0;
  #requested = false;
  #retryAt: number | undefined;
  #failures = 0;
  #lastStart: number | undefined;
  #lastEnd: number | undefined;
  #running = false;
  /** The latest run, kept after it settles so stopping can always await it. */
  #inFlight: Promise<void> | undefined;
  #timer: TimerHandle | undefined;
  #timerDue = 0;

  constructor(options: BoundedFrequencyRunnerOptions) {
    const { name, minIntervalMs, maxIntervalMs } = options;
    checkInterval(name, "minIntervalMs", minIntervalMs, true);
    checkInterval(name, "maxIntervalMs", maxIntervalMs, false);
    if (maxIntervalMs < minIntervalMs) {
      throw new RangeError(
        `Invalid maxIntervalMs "${maxIntervalMs}" for runner "${name}": ` +
          `expected at least minIntervalMs "${minIntervalMs}"`,
      );
    }
    const retryIntervalMs = options.retryIntervalMs ?? (minIntervalMs > 0 ? minIntervalMs : 1000);
    checkInterval(name, "retryIntervalMs", retryIntervalMs, false);
    this.#name = name;
    this.#fn = options.fn;
    this.#minIntervalMs = minIntervalMs;
    this.#maxIntervalMs = maxIntervalMs;
    this.#retryIntervalMs = retryIntervalMs;
    this.#maxRetryIntervalMs = Math.max(
      options.maxRetryIntervalMs ?? maxIntervalMs,
      retryIntervalMs,
    );
    this.#clock = options.clock ?? systemClock;
    this.#logger = options.logger ?? createLogger();
  }

  /** True while a run() or retry is waiting to be served; for health checks and tests. */
  get pending(): boolean {
    return this.#requested || this.#retryAt !== undefined;
  }

  /** True while fn is executing. */
  get running(): boolean {
    return this.#running;
  }

  /** Clock time at which the latest run started, or undefined before the first run. */
  get lastRunAt(): number | undefined {
    return this.#lastStart;
  }

  /**
   * Asks for a run as soon as the minimum interval allows. Cheap and safe to call in bursts or
   * from inside fn; before start() the request is remembered and served right after it.
   */
  run(): void {
    this.#requested = true;
    this.#schedule();
  }

  /**
   * Ensures fn runs again no later than `ms` from now (still subject to the minimum interval).
   * The soonest of several pending retries wins; any run in between satisfies it.
   */
  retryAfter(ms: number): void {
    const at = this.#clock.now() + Math.max(0, ms);
    if (this.#retryAt !== undefined && this.#retryAt <= at) return;
    this.#retryAt = at;
    this.#schedule();
  }

  /**
   * Starts serving requests and the periodic timer. The returned promise resolves once `signal`
   * has aborted, the timer is cleared and any in-flight run has finished; it never rejects.
   */
  async start(signal: AbortSignal): Promise<void> {
    if (this.#started) {
      throw new Error(`BoundedFrequencyRunner "${this.#name}" was already started`);
    }
    this.#started = true;
    this.#startedAt = this.#clock.now();
    if (!signal.aborted) {
      this.#logger.debug(3, "Runner loop starting", { runner: this.#name });
      this.#schedule();
      await new Promise<void>((resolve) => {
        signal.addEventListener("abort", () => {
          this.#stop();
          resolve();
        }, { once: true });
      });
    }
    this.#stop();
    await this.#inFlight;
    this.#logger.debug(3, "Runner loop stopped", { runner: this.#name });
  }

  #stop(): void {
    this.#stopped = true;
    this.#clearTimer();
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** When fn should next start given what is pending; never before the min-interval floor. */
  #nextDue(): number {
    const now = this.#clock.now();
    const floor = this.#lastStart === undefined ? now : this.#lastStart + this.#minIntervalMs;
    let due = (this.#lastEnd ?? this.#startedAt) + this.#maxIntervalMs;
    if (this.#requested) due = Math.min(due, Math.max(now, floor));
    if (this.#retryAt !== undefined) due = Math.min(due, Math.max(this.#retryAt, floor));
    return due;
  }

  /** Keeps exactly one timer armed for the next due run while started, idle and not stopped. */
  #schedule(): void {
    if (!this.#started || this.#stopped || this.#running) return;
    const due = this.#nextDue();
    if (this.#timer !== undefined && this.#timerDue === due) return;
    this.#clearTimer();
    this.#timerDue = due;
    this.#timer = this.#clock.setTimeout(
      () => this.#onTimer(),
      Math.max(0, due - this.#clock.now()),
    );
  }

  #onTimer(): void {
    this.#timer = undefined;
    if (this.#stopped || this.#running) return;
    // Real timers may fire a little early or be clamped; re-check before running.
    if (this.#clock.now() < this.#nextDue()) {
      this.#schedule();
      return;
    }
    this.#inFlight = this.#runOnce();
  }

  /** Marks the run as started synchronously, since fn may settle before its promise returns. */
  async #runOnce(): Promise<void> {
    this.#running = true;
    const started = this.#clock.now();
    this.#lastStart = started;
    this.#requested = false;
    this.#retryAt = undefined;
    try {
      await this.#fn();
      this.#failures = 0;
    } catch (err) {
      this.#failures++;
      const delay = Math.min(
        this.#retryIntervalMs * 2 ** (this.#failures - 1),
        this.#maxRetryIntervalMs,
      );
      const at = this.#clock.now() + delay;
      if (this.#retryAt === undefined || at < this.#retryAt) this.#retryAt = at;
      this.#logger.error("Run failed; retrying", {
        runner: this.#name,
        err,
        failures: this.#failures,
        retryInMs: this.#retryAt - this.#clock.now(),
      });
    }
    this.#lastEnd = this.#clock.now();
    this.#running = false;
    this.#logger.debug(3, "Runner ran", {
      runner: this.#name,
      elapsedMs: this.#lastEnd - started,
      nextPossibleInMs: this.#minIntervalMs,
      periodicInMs: this.#maxIntervalMs,
    });
    this.#schedule();
  }
}
