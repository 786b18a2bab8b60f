import assert from "node:assert/strict";
import { createMemoryLogger, type Logger, silentLogger } from "../../lib/log/mod.ts";
import { BoundedFrequencyRunner } from "../../lib/sync/mod.ts";
import { FakeClock } from "../support/fake_clock.ts";

interface HarnessOptions {
  readonly minIntervalMs?: number;
  readonly maxIntervalMs?: number;
  readonly retryIntervalMs?: number;
  /** How long each run takes in fake time. */
  readonly runMs?: number;
  /** Decides per run (0-based) whether fn rejects. */
  readonly fails?: (index: number) => boolean;
  readonly logger?: Logger;
  /** Leave the runner unstarted so a test can act before start(). */
  readonly deferStart?: boolean;
}

/** A runner on a fake clock at t=0 whose fn records the time each run starts. */
function harness(options: HarnessOptions = {}) {
  const clock = new FakeClock();
  const runs: number[] = [];
  let active = 0;
  let maxActive = 0;
  const runner = new BoundedFrequencyRunner({
    name: "test-runner",
    minIntervalMs: options.minIntervalMs ?? 1000,
    maxIntervalMs: options.maxIntervalMs ?? 10_000,
    ...(options.retryIntervalMs === undefined ? {} : { retryIntervalMs: options.retryIntervalMs }),
    clock,
    logger: options.logger ?? silentLogger,
    fn: async () => {
      const index = runs.length;
      runs.push(clock.now());
      active++;
      maxActive = Math.max(maxActive, active);
      try {
        if (options.runMs) await clock.sleep(options.runMs);
        if (options.fails?.(index)) throw new Error(`run ${index} failed`);
      } finally {
        active--;
      }
    },
  });
  const controller = new AbortController();
  let stopped: Promise<void> | undefined;
  const start = () => {
    stopped = runner.start(controller.signal);
  };
  if (!options.deferStart) start();
  return {
    clock,
    runner,
    runs,
    controller,
    start,
    maxActive: () => maxActive,
    /** The promise returned by start(), once started. */
    stopped: () => stopped,
    /** Advances the fake clock to absolute time `t`. */
    at: (t: number) => clock.advance(t - clock.now()),
    /**
     * Aborts, lets fake time run until an in-flight run has finished and the loop has ended, and
     * checks that no timer was left behind.
     */
    stop: async () => {
      controller.abort();
      let ended = false;
      const ending = stopped?.then(() => {
        ended = true;
      });
      for (
        let next = clock.nextTimerAt();
        !ended && next !== undefined;
        next = clock.nextTimerAt()
      ) {
        await clock.advance(next - clock.now());
      }
      await ending;
      assert.equal(clock.pendingTimers, 0);
    },
  };
}

Deno.test("BoundedFrequencyRunner runs the first request immediately", async () => {
  const h = harness();
  h.runner.run();
  await h.at(0);
  assert.deepEqual(h.runs, [0]);
  assert.equal(h.runner.lastRunAt, 0);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner runs nothing before start and serves earlier requests after it", async () => {
  const h = harness({ deferStart: true });
  h.runner.run();
  await h.at(50_000);
  assert.deepEqual(h.runs, []);
  assert.equal(h.clock.pendingTimers, 0);
  assert.equal(h.runner.pending, true);
  h.start();
  await h.at(50_000);
  assert.deepEqual(h.runs, [50_000]);
  assert.equal(h.runner.pending, false);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner coalesces a burst of requests into one run", async () => {
  const h = harness();
  for (let i = 0; i < 10; i++) h.runner.run();
  await h.at(500);
  assert.deepEqual(h.runs, [0]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner runs at most once per minInterval, measured from run start", async () => {
  const h = harness({ minIntervalMs: 1000, runMs: 200 });
  h.runner.run();
  await h.at(0);
  assert.deepEqual(h.runs, [0]);

  // Requests inside the window wait for it to close, and coalesce.
  await h.at(500);
  h.runner.run();
  await h.at(700);
  h.runner.run();
  await h.at(999);
  assert.deepEqual(h.runs, [0]);
  assert.equal(h.runner.pending, true);
  await h.at(1000);
  assert.deepEqual(h.runs, [0, 1000]);

  // A request after the window has closed runs at once.
  await h.at(2500);
  h.runner.run();
  await h.at(2500);
  assert.deepEqual(h.runs, [0, 1000, 2500]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner runs every maxInterval when nobody asks", async () => {
  const h = harness({ maxIntervalMs: 10_000 });
  await h.at(9_999);
  assert.deepEqual(h.runs, []);
  await h.at(30_000);
  assert.deepEqual(h.runs, [10_000, 20_000, 30_000]);

  // A requested run restarts the periodic countdown.
  await h.at(33_000);
  h.runner.run();
  await h.at(50_000);
  assert.deepEqual(h.runs, [10_000, 20_000, 30_000, 33_000, 43_000]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner measures maxInterval from the end of the previous run", async () => {
  const h = harness({ maxIntervalMs: 10_000, runMs: 500 });
  await h.at(21_000);
  assert.deepEqual(h.runs, [10_000, 20_500]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner follows a request made during a run with exactly one run", async () => {
  const h = harness({ minIntervalMs: 1000, runMs: 3000 });
  h.runner.run();
  await h.at(1000);
  h.runner.run();
  await h.at(2000);
  h.runner.run();
  h.runner.run();
  await h.at(2999);
  assert.deepEqual(h.runs, [0]);
  await h.at(3000);
  assert.deepEqual(h.runs, [0, 3000]);
  await h.at(9000);
  assert.deepEqual(h.runs, [0, 3000]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner never overlaps runs even when fn is slower than every interval", async () => {
  const h = harness({ minIntervalMs: 0, maxIntervalMs: 100, runMs: 1000 });
  for (let t = 0; t <= 5000; t += 50) {
    h.runner.run();
    h.runner.retryAfter(0);
    await h.at(t);
  }
  assert.equal(h.maxActive(), 1);
  assert.deepEqual(h.runs, [0, 1000, 2000, 3000, 4000, 5000]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner retries a failed run with backoff and resets it after success", async () => {
  const logger = createMemoryLogger();
  // Runs 0-2 fail, 3 succeeds, 4 fails.
  const h = harness({
    minIntervalMs: 1000,
    maxIntervalMs: 60_000,
    fails: (i) => i < 3 || i === 4,
    logger,
  });
  h.runner.run();
  await h.at(7000);
  // Retry delays 1s, 2s, 4s after each failure.
  assert.deepEqual(h.runs, [0, 1000, 3000, 7000]);
  assert.equal(logger.lines.filter((l) => l.includes("Run failed")).length, 3);
  assert.match(logger.lines.find((l) => l.includes("Run failed")) ?? "", /run 0 failed/);

  // After the success only the periodic run is due.
  await h.at(66_999);
  assert.deepEqual(h.runs, [0, 1000, 3000, 7000]);
  assert.equal(h.runner.pending, false);

  // The next failure starts the backoff from the first step again.
  h.runner.run();
  await h.at(68_000);
  assert.deepEqual(h.runs, [0, 1000, 3000, 7000, 66_999, 67_999]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner caps the retry backoff at maxInterval", async () => {
  const h = harness({
    minIntervalMs: 0,
    maxIntervalMs: 5000,
    retryIntervalMs: 1000,
    fails: () => true,
  });
  h.runner.run();
  await h.at(17_000);
  assert.deepEqual(h.runs, [0, 1000, 3000, 7000, 12_000, 17_000]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner survives an fn that throws synchronously", async () => {
  const clock = new FakeClock();
  const runs: number[] = [];
  const runner = new BoundedFrequencyRunner({
    name: "sync-thrower",
    minIntervalMs: 1000,
    maxIntervalMs: 10_000,
    clock,
    logger: silentLogger,
    fn: () => {
      runs.push(clock.now());
      throw new Error("boom");
    },
  });
  const controller = new AbortController();
  const stopped = runner.start(controller.signal);
  runner.run();
  await clock.advance(3000);
  assert.deepEqual(runs, [0, 1000, 3000]);
  controller.abort();
  await stopped;
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("BoundedFrequencyRunner retryAfter() runs no later than asked, soonest request winning", async () => {
  const h = harness({ minIntervalMs: 1000, maxIntervalMs: 10_000 });
  h.runner.run();
  await h.at(0);
  h.runner.retryAfter(5000);
  h.runner.retryAfter(3000);
  h.runner.retryAfter(8000);
  assert.equal(h.runner.pending, true);
  await h.at(2999);
  assert.deepEqual(h.runs, [0]);
  await h.at(3000);
  assert.deepEqual(h.runs, [0, 3000]);
  // The retry was satisfied; the later requests do not fire on their own.
  await h.at(12_999);
  assert.deepEqual(h.runs, [0, 3000]);
  await h.at(13_000);
  assert.deepEqual(h.runs, [0, 3000, 13_000]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner retryAfter() still respects minInterval", async () => {
  const h = harness({ minIntervalMs: 1000 });
  h.runner.run();
  await h.at(0);
  h.runner.retryAfter(100);
  await h.at(999);
  assert.deepEqual(h.runs, [0]);
  await h.at(1000);
  assert.deepEqual(h.runs, [0, 1000]);
  await h.stop();
});

Deno.test("BoundedFrequencyRunner honours retryAfter() called from inside fn", async () => {
  const clock = new FakeClock();
  const runs: number[] = [];
  const runner: BoundedFrequencyRunner = new BoundedFrequencyRunner({
    name: "self-retry",
    minIntervalMs: 1000,
    maxIntervalMs: 60_000,
    clock,
    logger: silentLogger,
    fn: async () => {
      runs.push(clock.now());
      await clock.sleep(100);
      if (runs.length === 1) runner.retryAfter(2000);
    },
  });
  const controller = new AbortController();
  const stopped = runner.start(controller.signal);
  runner.run();
  await clock.advance(10_000);
  assert.deepEqual(runs, [0, 2100]);
  controller.abort();
  await stopped;
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("BoundedFrequencyRunner abort clears timers and waits for the in-flight run", async () => {
  const h = harness({ runMs: 5000 });
  h.runner.run();
  await h.at(1000);
  assert.equal(h.runner.running, true);
  let done = false;
  void h.stopped()?.then(() => {
    done = true;
  });
  h.controller.abort();
  assert.equal(h.clock.pendingTimers, 1, "only the run's own sleep is left");
  await h.at(4999);
  assert.equal(done, false);
  assert.equal(h.runner.running, true);
  await h.at(5000);
  assert.equal(done, true);
  assert.equal(h.runner.running, false);
  await h.stop();

  // Requests after stop are ignored and arm no timers.
  h.runner.run();
  h.runner.retryAfter(0);
  await h.at(100_000);
  assert.deepEqual(h.runs, [0]);
  assert.equal(h.clock.pendingTimers, 0);
});

Deno.test("BoundedFrequencyRunner start() with an aborted signal runs nothing", async () => {
  const h = harness({ deferStart: true });
  h.runner.run();
  h.controller.abort();
  h.start();
  await h.stop();
  await h.at(100_000);
  assert.deepEqual(h.runs, []);
});

Deno.test("BoundedFrequencyRunner start() twice is rejected", async () => {
  const h = harness();
  await assert.rejects(
    () => h.runner.start(new AbortController().signal),
    { message: 'BoundedFrequencyRunner "test-runner" was already started' },
  );
  await h.stop();
});

Deno.test("BoundedFrequencyRunner rejects intervals that cannot work", () => {
  const base = { name: "bad", fn: () => {}, logger: silentLogger, clock: new FakeClock() };
  assert.throws(
    () => new BoundedFrequencyRunner({ ...base, minIntervalMs: 5000, maxIntervalMs: 1000 }),
    {
      name: "RangeError",
      message:
        'Invalid maxIntervalMs "1000" for runner "bad": expected at least minIntervalMs "5000"',
    },
  );
  assert.throws(
    () => new BoundedFrequencyRunner({ ...base, minIntervalMs: -1, maxIntervalMs: 1000 }),
    RangeError,
  );
  assert.throws(
    () => new BoundedFrequencyRunner({ ...base, minIntervalMs: 0, maxIntervalMs: 0 }),
    RangeError,
  );
  assert.throws(
    () =>
      new BoundedFrequencyRunner({
        ...base,
        minIntervalMs: 0,
        maxIntervalMs: 1000,
        retryIntervalMs: Number.NaN,
      }),
    RangeError,
  );
});
