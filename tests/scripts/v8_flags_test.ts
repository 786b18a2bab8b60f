import assert from "node:assert/strict";
import { compileArgs } from "../../scripts/build.ts";
import { proxyRunArgs } from "../../scripts/netns/mod.ts";
import { PROXY_V8_FLAGS, v8FlagsArg } from "../../scripts/v8_flags.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const tasks: Record<string, string> = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).tasks;

Deno.test("v8FlagsArg() joins PROXY_V8_FLAGS into one --v8-flags argument", () => {
  assert.equal(v8FlagsArg(), `--v8-flags=${PROXY_V8_FLAGS.join(",")}`);
});

Deno.test("deno.json's start and render tasks run with PROXY_V8_FLAGS", () => {
  for (const name of ["start", "render"]) {
    assert.ok(tasks[name]?.split(" ").includes(v8FlagsArg()), `${name}: ${tasks[name]}`);
  }
});

Deno.test("compileArgs() and proxyRunArgs() pass PROXY_V8_FLAGS to deno", () => {
  const compile = compileArgs({ permissions: {}, root: ROOT, output: "out" });
  assert.ok(compile.includes(v8FlagsArg()), compile.join(" "));
  const run = proxyRunArgs(["--version"]);
  assert.ok(run.indexOf(v8FlagsArg()) < run.indexOf(`${ROOT}main.ts`), run.join(" "));
  assert.ok(run.includes(v8FlagsArg()), run.join(" "));
});

/**
 * Runs a program that fills and frees 50 MB, collects as the proxy does at quiet time, then
 * idles on timers for 1 s, with V8's memory reducer set to start and act within 100 ms; returns
 * what V8 traced of the reducer.
 */
async function memoryReducerTrace(flags: readonly string[]): Promise<string[]> {
  const code = `let keep = [];
for (let round = 0; round < 2; round++) {
  for (let i = 0; i < 600_000; i++) keep.push({ i, s: "x" + i });
  keep = [];
}
gc({ type: "major", execution: "sync", flavor: "last-resort" });
for (let t = 0; t < 10; t++) await new Promise((r) => setTimeout(r, 100));`;
  const trace = [
    "--gc-memory-reducer-start-delay-ms=100",
    "--memory-reducer-delay-ms=100",
    "--trace-memory-reducer",
  ];
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", `--v8-flags=${[...flags, ...trace].join(",")}`, code],
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).split("\n").filter((l) => l.includes("reducer"));
}

Deno.test("PROXY_V8_FLAGS keep V8's memory reducer from collecting at idle", async () => {
  const without = PROXY_V8_FLAGS.filter((f) => f !== "--no-memory-reducer");
  const control = await memoryReducerTrace(without);
  assert.ok(control.length > 0, "the reducer should act without --no-memory-reducer");
  assert.deepEqual(await memoryReducerTrace(PROXY_V8_FLAGS), []);
});

/** Runs a hot loop with V8's optimization traced; returns how each optimizing compile ran. */
async function compileModes(flags: readonly string[]): Promise<string[]> {
  const code = `function add(a, b) { return a + b; }
let sum = 0;
for (let i = 0; i < 2_000_000; i++) sum = add(sum, i);
console.log(sum);`;
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", `--v8-flags=${[...flags, "--trace-opt"].join(",")}`, code],
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const compiles = new TextDecoder().decode(out.stdout).split("\n")
    .filter((l) => l.startsWith("[compiling method"));
  return compiles.map((l) => l.match(/ConcurrencyMode::(\w+)/)?.[1] ?? l);
}

Deno.test("PROXY_V8_FLAGS have V8 compile hot functions on the JS thread", async () => {
  const without = PROXY_V8_FLAGS.filter((f) => f !== "--no-concurrent-recompilation");
  assert.ok((await compileModes(without)).includes("kConcurrent"), "control compiles on workers");
  const modes = await compileModes(PROXY_V8_FLAGS);
  assert.ok(modes.length > 0, "the loop should be optimized");
  assert.deepEqual([...new Set(modes)], ["kSynchronous"]);
});
