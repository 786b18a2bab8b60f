import assert from "node:assert/strict";
import { sleep } from "../../lib/sync/mod.ts";
import { FakeClock } from "../support/fake_clock.ts";

Deno.test("sleep() resolves after the delay on the given clock", async () => {
  const clock = new FakeClock();
  let done = false;
  void sleep(clock, 100, new AbortController().signal).then(() => done = true);
  await clock.advance(99);
  assert.equal(done, false);
  await clock.advance(1);
  assert.equal(done, true);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("sleep() resolves early on abort and leaves no timer behind", async () => {
  const clock = new FakeClock();
  const ac = new AbortController();
  let done = false;
  void sleep(clock, 100, ac.signal).then(() => done = true);
  ac.abort();
  await clock.flush();
  assert.equal(done, true);
  assert.equal(clock.pendingTimers, 0);
  await sleep(clock, 100, ac.signal);
  assert.equal(clock.pendingTimers, 0);
});
