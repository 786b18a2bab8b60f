import assert from "node:assert/strict";
import { createMemoryReclaimer, exposedGc } from "../../lib/app/memory_reclaim.ts";
import { FakeClock } from "../support/fake_clock.ts";

Deno.test("memory reclaimer collects once, quietMs after the last sync of a burst", async () => {
  const clock = new FakeClock();
  const collectedAt: number[] = [];
  const r = createMemoryReclaimer({
    clock,
    quietMs: 2_000,
    collect: () => collectedAt.push(clock.now()),
  });
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
  const clock = new FakeClock();
  const collectedAt: number[] = [];
  const r = createMemoryReclaimer({
    clock,
    quietMs: 1_000,
    collect: () => collectedAt.push(clock.now()),
  });
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

Deno.test("under --expose-gc (the program's V8 flags) exposedGc() runs a real collection", async () => {
  const code = `import { exposedGc } from ${
    JSON.stringify(new URL("../../lib/app/memory_reclaim.ts", import.meta.url).href)
  };
const gc = exposedGc(); if (!gc) Deno.exit(3);
let junk = Array.from({ length: 200_000 }, (_, i) => ({ i, s: "x" + i }));
const before = Deno.memoryUsage().heapUsed; junk = []; gc();
console.log(before - Deno.memoryUsage().heapUsed);`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", "--v8-flags=--expose-gc", code],
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const freed = Number(new TextDecoder().decode(out.stdout).trim());
  assert.ok(freed > 5_000_000, `gc() freed only ${freed} bytes of a ~10 MB garbage array`);
});
