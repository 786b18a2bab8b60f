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
    collectRegular: () => {},
    heapUsed: () => 0,
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

for (
  const [when, extraFlags] of [
    ["", ""],
    // Keeps a marking cycle under way when gc() is called, as starved concurrent markers do.
    [", also during incremental marking", ",--stress-incremental-marking"],
  ]
) {
  Deno.test(`under --expose-gc (the program's V8 flags) exposedGc() frees garbage and gives the pages back${when}`, async () => {
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
      args: ["eval", `--v8-flags=--expose-gc,--max-semi-space-size=2${extraFlags}`, code],
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
}

Deno.test("memory reclaimer collects once before the first sync, never again", () => {
  const clock = new FakeClock();
  let before = 0;
  let quiet = 0;
  const r = createMemoryReclaimer({
    clock,
    collect: () => quiet++,
    collectRegular: () => before++,
    heapUsed: () => 0,
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
    collectRegular: () => before++,
    heapUsed: () => 0,
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

/** A reclaimer whose heap holds `heap.used` bytes, which its regular collection sets to `heap.live`. */
function growingHeapReclaimer() {
  const clock = new FakeClock();
  const heap = { used: 10, live: 10 };
  const regular: number[] = [];
  const quiet: number[] = [];
  const r = createMemoryReclaimer({
    clock,
    quietMs: 2_000,
    growthLimitBytes: 3,
    heapUsed: () => heap.used,
    collectRegular: () => {
      regular.push(heap.used);
      heap.used = heap.live;
    },
    collect: () => {
      quiet.push(heap.used);
      heap.used = heap.live;
    },
  });
  /** One sync that leaves `garbage` more bytes in use. */
  const sync = (garbage: number) => {
    r.beforeSync();
    heap.used += garbage;
    r.synced();
  };
  return { clock, heap, regular, quiet, r, sync };
}

Deno.test("under churn, a sync that grows the heap past the limit is followed by a regular collection", async () => {
  const { clock, heap, regular, quiet, sync } = growingHeapReclaimer();
  sync(5); // the first sync: collected before it (at 10), then it grew the heap by 5
  assert.deepEqual(regular, [10, 15], "before the first sync, and after it grew by 5 > 3");
  await clock.advance(1_000);
  sync(2); // 12: within the limit
  await clock.advance(1_000);
  sync(2); // 14: 4 past the last collection
  assert.deepEqual(regular, [10, 15, 14]);
  await clock.advance(1_000);
  heap.live = 11;
  sync(1);
  assert.deepEqual(regular, [10, 15, 14], "11 is within the limit of 10");
  assert.deepEqual(quiet, [], "no quiet period yet");
  await clock.advance(2_000);
  assert.deepEqual(quiet, [11], "the quiet-time collection still follows the burst");
});

Deno.test("the growth limit counts from where V8's own collections left the heap", async () => {
  const { clock, heap, regular, sync } = growingHeapReclaimer();
  sync(0); // collected before it: the floor is 10
  await clock.advance(1_000);
  heap.used = 7; // V8 collected by itself during the next sync's start
  sync(2); // 9: below the floor, which drops to 9
  sync(3); // 12: 3 past 9, not more
  assert.deepEqual(regular, [10]);
  sync(1); // 13: 4 past 9
  assert.deepEqual(regular, [10, 13]);
});

Deno.test("a sync's end with no sync started (its wait for start-up failed) collects nothing", () => {
  const { clock, heap, regular, r } = growingHeapReclaimer();
  heap.used = 1e9;
  r.synced();
  assert.equal(regular.length, 0);
  assert.notEqual(clock.nextTimerAt(), undefined, "the quiet period is still scheduled");
});
