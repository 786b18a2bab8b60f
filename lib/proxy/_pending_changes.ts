/**
 * Per-key change accounting between two snapshots, as upstream's change trackers do it: the
 * value at the last snapshot is remembered on the first change, and a key whose value returns to
 * that baseline (added then deleted, or an update that changes nothing) is no longer pending.
 */
import { deepEqual } from "./_deep_equal.ts";

/** Keys changed since the last snapshot, with each key's value at that snapshot. */
export class PendingChanges<V> {
  readonly #baseline = new Map<string, V | undefined>();

  /** Notes that `key` went from `before` to `after` (undefined = absent). */
  record(key: string, before: V | undefined, after: V | undefined): void {
    if (!this.#baseline.has(key)) {
      if (!deepEqual(before, after)) this.#baseline.set(key, before);
      return;
    }
    if (deepEqual(this.#baseline.get(key), after)) this.#baseline.delete(key);
  }

  /** Pending keys with their baseline values. */
  entries(): IterableIterator<[string, V | undefined]> {
    return this.#baseline.entries();
  }

  /** Pending keys. */
  keys(): IterableIterator<string> {
    return this.#baseline.keys();
  }

  /** Number of pending keys. */
  get size(): number {
    return this.#baseline.size;
  }

  /** Forgets everything (the changes were consumed by a snapshot). */
  clear(): void {
    this.#baseline.clear();
  }
}
