import assert from "node:assert/strict";
import { systemClock } from "../../lib/sync/mod.ts";
import { FakeClock } from "../support/fake_clock.ts";

Deno.test("systemClock reads wall time and hands out cancellable numeric handles", () => {
  const before = Date.now();
  const now = systemClock.now();
  assert.ok(now >= before && now <= Date.now());
  let fired = false;
  // Longer than the runtime's limit: clamped instead of firing at once; cancelled either way.
  const handle = systemClock.setTimeout(() => {
    fired = true;
  }, 2 ** 40);
  assert.equal(typeof handle, "number");
  systemClock.clearTimeout(handle);
  assert.equal(fired, false);
});

Deno.test("FakeClock fires timers in due order, ties by creation, with now() at the due time", async () => {
  const clock = new FakeClock({ startMs: 1000 });
  const fired: string[] = [];
  const record = (name: string) => () => fired.push(`${name}@${clock.now()}`);
  clock.setTimeout(record("c"), 300);
  clock.setTimeout(record("a"), 100);
  clock.setTimeout(record("b"), 100);
  const cancelled = clock.setTimeout(record("x"), 200);
  clock.clearTimeout(cancelled);
  await clock.advance(250);
  assert.deepEqual(fired, ["a@1100", "b@1100"]);
  assert.equal(clock.now(), 1250);
  assert.equal(clock.nextTimerAt(), 1300);
  await clock.advance(50);
  assert.deepEqual(fired, ["a@1100", "b@1100", "c@1300"]);
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("FakeClock settles promise work between timers and fires timers it creates", async () => {
  const clock = new FakeClock();
  const steps: string[] = [];
  const task = async () => {
    steps.push(`start@${clock.now()}`);
    await clock.sleep(100);
    await Promise.resolve();
    steps.push(`middle@${clock.now()}`);
    await clock.sleep(100);
    steps.push(`end@${clock.now()}`);
  };
  clock.setTimeout(() => void task(), 50);
  clock.setTimeout(() => steps.push(`other@${clock.now()}`), 151);
  await clock.advance(1000);
  assert.deepEqual(steps, ["start@50", "middle@150", "other@151", "end@250"]);
});

Deno.test("FakeClock advance() rejects negative time and endless zero-delay loops", async () => {
  const clock = new FakeClock();
  await assert.rejects(() => clock.advance(-1), RangeError);
  const loop = () => {
    clock.setTimeout(loop, 0);
  };
  clock.setTimeout(loop, 0);
  await assert.rejects(() => clock.advance(0), /expected no timer loop/);
});
