/**
 * Exponential backoff with jitter for the watch loop (client-go's reflector uses 800 ms doubling
 * to 30 s with jitter). Randomness is injected so a test can pin the schedule.
 */

/** Tuning of a Backoff; every field has a default. */
export interface BackoffOptions {
  /** First delay before jitter, in ms. Default 800. */
  readonly initialMs?: number;
  /** Upper bound of any delay, jitter included, in ms. Default 30 000. */
  readonly maxMs?: number;
  /** Growth per failure. Default 2. */
  readonly factor?: number;
  /** Up to this fraction of the delay is added at random. Default 0.5. */
  readonly jitter?: number;
  /** Returns a number in [0, 1); defaults to Math.random. */
  readonly random?: () => number;
}

/** Delays for consecutive failures; reset() after a success starts over. */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  readonly #factor: number;
  readonly #jitter: number;
  readonly #random: () => number;
  #failures = 0;

  constructor(options: BackoffOptions = {}) {
    this.#initialMs = options.initialMs ?? 800;
    this.#maxMs = options.maxMs ?? 30_000;
    this.#factor = options.factor ?? 2;
    this.#jitter = options.jitter ?? 0.5;
    this.#random = options.random ?? Math.random;
  }

  /** How many failures in a row have been counted since the last reset. */
  get failures(): number {
    return this.#failures;
  }

  /** Counts one more failure and returns how long to wait before the next attempt, in ms. */
  next(): number {
    const base = Math.min(this.#maxMs, this.#initialMs * this.#factor ** this.#failures);
    this.#failures++;
    const jittered = base * (1 + this.#jitter * this.#random());
    return Math.round(Math.min(this.#maxMs, jittered));
  }

  /** Forgets past failures: the next delay is the initial one again. */
  reset(): void {
    this.#failures = 0;
  }
}
