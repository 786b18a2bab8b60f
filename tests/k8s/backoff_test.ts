import assert from "node:assert/strict";
import { Backoff } from "../../lib/k8s/_backoff.ts";

/** A random source that replays `values` in a loop. */
function replay(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] ?? 0;
}

Deno.test("Backoff.next() doubles from 800ms and caps at 30s without jitter", () => {
  const b = new Backoff({ random: () => 0 });
  const delays = Array.from({ length: 9 }, () => b.next());
  assert.deepEqual(delays, [800, 1600, 3200, 6400, 12800, 25600, 30000, 30000, 30000]);
  assert.equal(b.failures, 9);
});

Deno.test("Backoff.next() adds up to half the delay as jitter, never above the cap", () => {
  const b = new Backoff({ random: replay(0.5, 0.999, 0.25) });
  assert.equal(b.next(), 1000); // 800 * 1.25
  assert.equal(b.next(), 2399); // 1600 * 1.4995
  assert.equal(b.next(), 3600); // 3200 * 1.125
  const capped = new Backoff({ initialMs: 20_000, random: () => 0.9 });
  assert.equal(capped.next(), 29_000);
  assert.equal(capped.next(), 30_000);
});

Deno.test("Backoff.reset() starts the schedule over", () => {
  const b = new Backoff({ random: () => 0, initialMs: 100, maxMs: 1000 });
  b.next();
  b.next();
  b.next();
  b.reset();
  assert.equal(b.failures, 0);
  assert.equal(b.next(), 100);
});
