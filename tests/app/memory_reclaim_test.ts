import assert from "node:assert/strict";
import { createMemoryReclaimer, exposedGc } from "../../lib/app/memory_reclaim.ts";
import { FakeClock } from "../support/fake_clock.ts";

/** A reclaimer on a fake clock that records when it collects, quiet after `quietMs`. */
function recordingReclaimer(quietMs: number) {
  const clock = new FakeClock();
  const collectedAt: number[] = [];
  const r = createMemoryReclaimer({
    clock,
    quietMs,
    collect: () => collectedAt.push(clock.now()),
    collectBeforeFirstSync: () => {},
  });
  return { clock, collectedAt, r };
}

Deno.test("memory reclaimer collects once, quietMs after the last sync of a burst", async () => {
  const { clock, collectedAt, r } = recordingReclaimer(2_000);
  r.synced(); // t=0
  await clock.advance(1_500);
  r.synced(); // t=1500: the quiet period starts again
  await clock.advance(1_900);
  assert.deepEqual(collectedAt, []);
  await clock.advance(100);
  assert.deepEqual(collectedAt, [3_500]);
  await clock.advance(10_000);
  assert.deepEqual(collectedAt, [3_500], "no collection without a new sync");
});

Deno.test("memory reclaimer stop() cancels a pending collection", async () => {
  const { clock, collectedAt, r } = recordingReclaimer(1_000);
  r.synced();
  r.stop();
  await clock.advance(5_000);
  assert.deepEqual(collectedAt, []);
  assert.equal(clock.nextTimerAt(), undefined);
});

Deno.test("without an exposed gc() the reclaimer schedules nothing", () => {
  const clock = new FakeClock();
  const saved = (globalThis as { gc?: unknown }).gc;
  delete (globalThis as { gc?: unknown }).gc;
  try {
    assert.equal(exposedGc(), undefined);
    createMemoryReclaimer({ clock }).synced();
    assert.equal(clock.nextTimerAt(), undefined);
  } finally {
    if (saved !== undefined) (globalThis as { gc?: unknown }).gc = saved;
  }
});

Deno.test("under --expose-gc (the program's V8 flags) exposedGc() frees garbage and gives the pages back", async () => {
  // One object in three stays alive, spread over every page: a plain gc() frees the rest but
  // keeps nearly all pages (heapTotal ~0.93x); the last-resort collection compacts them.
  const code = `import { exposedGc } from ${
    JSON.stringify(new URL("../../lib/app/memory_reclaim.ts", import.meta.url).href)
  };
const gc = exposedGc(); if (!gc) Deno.exit(3);
const keep = []; let junk = [];
for (let i = 0; i < 300_000; i++) (i % 3 === 0 ? keep : junk).push({ i, s: "x" + i, a: [i] });
junk = [];
const before = Deno.memoryUsage();
gc();
const after = Deno.memoryUsage();
console.log(JSON.stringify({ before, after, kept: keep.length }));`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc,--max-semi-space-size=2", code],
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const { before, after } = JSON.parse(new TextDecoder().decode(out.stdout));
  const freed = before.heapUsed - after.heapUsed;
  assert.ok(freed > 20_000_000, `gc() freed only ${freed} bytes of ~40 MB of garbage`);
  assert.ok(
    after.heapTotal < 0.6 * before.heapTotal,
    `the heap kept its pages: ${before.heapTotal} -> ${after.heapTotal} bytes`,
  );
});

Deno.test("memory reclaimer collects once before the first sync, never again", () => {
  const clock = new FakeClock();
  let before = 0;
  let quiet = 0;
  const r = createMemoryReclaimer({
    clock,
    collect: () => quiet++,
    collectBeforeFirstSync: () => before++,
  });
  r.beforeSync();
  r.synced();
  r.beforeSync();
  r.synced();
  assert.equal(before, 1);
  assert.equal(quiet, 0, "the quiet-time collection is a separate one");
});

Deno.test("memory reclaimer also collects before slow start-up reads, only before the first sync", () => {
  const clock = new FakeClock();
  let before = 0;
  const r = createMemoryReclaimer({
    clock,
    collect: () => {},
    collectBeforeFirstSync: () => before++,
  });
  r.beforeFirstReads();
  assert.equal(before, 1, "the lists' garbage, while the reads run");
  r.beforeSync();
  assert.equal(before, 2, "the reads' garbage, right before the first sync");
  r.synced();
  r.beforeFirstReads();
  r.beforeSync();
  assert.equal(before, 2, "never after the first sync");
});

Deno.test("memory reclaimer collects after a relist, but never during a sync", async () => {
  const { clock, collectedAt, r } = recordingReclaimer(2_000);
  r.listed(); // the initial lists: the first sync's own collection covers them
  await clock.advance(5_000);
  assert.deepEqual(collectedAt, []);
  r.beforeSync(); // t=5000
  r.synced();
  await clock.advance(2_000);
  assert.deepEqual(collectedAt, [7_000]);
  r.listed(); // t=7000: a relist that changed nothing, so no sync follows
  await clock.advance(2_000);
  assert.deepEqual(collectedAt, [7_000, 9_000]);
  r.synced(); // t=9000
  await clock.advance(1_000);
  r.beforeSync(); // t=10000: a long sync starts before the quiet period is over
  r.listed(); // a relist while it runs
  await clock.advance(5_000);
  assert.deepEqual(collectedAt, [7_000, 9_000], "nothing collected while the sync runs");
  r.synced(); // t=15000
  await clock.advance(2_000);
  assert.deepEqual(collectedAt, [7_000, 9_000, 17_000]);
});
