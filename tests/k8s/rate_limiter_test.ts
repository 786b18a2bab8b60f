import assert from "node:assert/strict";
import { createTokenBucket } from "../../lib/k8s/mod.ts";
import { FakeClock } from "../support/fake_clock.ts";

Deno.test("createTokenBucket() lets a burst through at once, then paces requests at qps", async () => {
  const clock = new FakeClock({ startMs: 1000 });
  const limiter = createTokenBucket({ qps: 5, burst: 2, clock });
  const passed: number[] = [];
  for (let i = 0; i < 5; i++) void limiter.wait().then(() => passed.push(clock.now() - 1000));
  await clock.flush();
  assert.deepEqual(passed, [0, 0]);
  await clock.advance(1000);
  assert.deepEqual(passed, [0, 0, 200, 400, 600]);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("createTokenBucket() refills while idle, up to the burst", async () => {
  const clock = new FakeClock();
  const limiter = createTokenBucket({ qps: 10, burst: 3, clock });
  for (let i = 0; i < 3; i++) await limiter.wait();
  await clock.advance(10_000);
  let passed = 0;
  for (let i = 0; i < 4; i++) void limiter.wait().then(() => passed++);
  await clock.flush();
  assert.equal(passed, 3);
  await clock.advance(100);
  assert.equal(passed, 4);
});

Deno.test("createTokenBucket() with qps 0 never waits, and an abort ends a wait", async () => {
  const clock = new FakeClock();
  const free = createTokenBucket({ qps: 0, burst: 0, clock });
  for (let i = 0; i < 100; i++) await free.wait();
  assert.equal(clock.pendingTimers, 0);
  const slow = createTokenBucket({ qps: 1, burst: 1, clock });
  await slow.wait();
  const ac = new AbortController();
  const waiting = slow.wait(ac.signal);
  assert.equal(clock.pendingTimers, 1);
  ac.abort();
  await waiting;
  assert.equal(clock.pendingTimers, 0);
});
