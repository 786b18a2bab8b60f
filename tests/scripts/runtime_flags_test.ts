import assert from "node:assert/strict";
import { compileArgs } from "../../scripts/build.ts";
import { proxyRunArgs } from "../../scripts/netns/mod.ts";
import {
  PROXY_DENO_FLAGS,
  PROXY_V8_FLAGS,
  runtimeArgs,
  v8FlagsArg,
} from "../../scripts/runtime_flags.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const tasks: Record<string, string> = JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).tasks;

Deno.test("runtimeArgs() are PROXY_DENO_FLAGS and one --v8-flags argument of PROXY_V8_FLAGS", () => {
  assert.equal(v8FlagsArg(), `--v8-flags=${PROXY_V8_FLAGS.join(",")}`);
  assert.deepEqual(runtimeArgs(), [...PROXY_DENO_FLAGS, v8FlagsArg()]);
});

/** Asserts that every one of runtimeArgs() comes after `words[0]` and before `main`. */
function assertRuntimeArgsBefore(words: readonly string[], main: string, what: string): void {
  for (const arg of runtimeArgs()) {
    const at = words.indexOf(arg);
    assert.ok(at > 0 && at < words.indexOf(main), `${what} lacks ${arg} before ${main}`);
  }
}

Deno.test("deno.json's start and render tasks run with runtimeArgs()", () => {
  for (const name of ["start", "render"]) {
    assertRuntimeArgsBefore(tasks[name]?.split(" ") ?? [], "main.ts", `${name}: ${tasks[name]}`);
  }
});

Deno.test("compileArgs() and proxyRunArgs() pass runtimeArgs() to deno", () => {
  const compile = compileArgs({ permissions: {}, root: ROOT, output: "out" });
  for (const arg of runtimeArgs()) {
    assert.ok(compile.indexOf(arg) > 0, `compile lacks ${arg}: ${compile.join(" ")}`);
  }
  const run = proxyRunArgs(["--version"]);
  assertRuntimeArgsBefore(run, `${ROOT}main.ts`, `run: ${run.join(" ")}`);
});

/** Runs a module twice with `flags` in a fresh DENO_DIR; returns whether V8's code cache exists. */
async function leavesCodeCache(flags: readonly string[]): Promise<boolean> {
  const dir = await Deno.makeTempDir({ prefix: "code-cache-" });
  try {
    await Deno.writeTextFile(`${dir}/m.ts`, "export const f = () => 1;\nconsole.log(f());\n");
    for (let run = 0; run < 2; run++) {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", ...flags, `${dir}/m.ts`],
        env: { DENO_DIR: `${dir}/deno` },
      }).output();
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    }
    return [...Deno.readDirSync(`${dir}/deno`)].some((e) => e.name.startsWith("v8_code_cache"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("PROXY_DENO_FLAGS keep Deno from caching V8's compiled code", async () => {
  assert.equal(await leavesCodeCache([]), true, "control: deno caches compiled code");
  assert.equal(await leavesCodeCache(PROXY_DENO_FLAGS), false);
});

/** Runs `code` with `flags` and V8's `trace` flags under `deno eval`; returns its stdout lines. */
async function evalTraced(
  flags: readonly string[],
  trace: readonly string[],
  code: string,
): Promise<string[]> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["eval", `--v8-flags=${[...flags, ...trace].join(",")}`, code],
  }).output();
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).split("\n");
}

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
  return (await evalTraced(flags, trace, code)).filter((l) => l.includes("reducer"));
}

Deno.test("PROXY_V8_FLAGS keep V8's memory reducer from collecting at idle", async () => {
  const without = PROXY_V8_FLAGS.filter((f) => f !== "--no-memory-reducer");
  const control = await memoryReducerTrace(without);
  assert.ok(control.length > 0, "the reducer should act without --no-memory-reducer");
  assert.deepEqual(await memoryReducerTrace(PROXY_V8_FLAGS), []);
});

/** Runs a hot loop with V8's optimization traced; returns its "[compiling method" lines. */
async function hotLoopCompiles(flags: readonly string[]): Promise<string[]> {
  const code = `function add(a, b) { return a + b; }
let sum = 0;
for (let i = 0; i < 2_000_000; i++) sum = add(sum, i);
console.log(sum);`;
  return (await evalTraced(flags, ["--trace-opt"], code))
    .filter((l) => l.startsWith("[compiling method"));
}

/** How each optimizing compile of the hot loop ran (kSynchronous: on the JS thread). */
async function compileModes(flags: readonly string[]): Promise<string[]> {
  return (await hotLoopCompiles(flags)).map((l) => l.match(/ConcurrencyMode::(\w+)/)?.[1] ?? l);
}

/** Which compiler each optimizing compile of the hot loop targeted (MAGLEV, TURBOFAN_JS). */
async function compileTargets(flags: readonly string[]): Promise<string[]> {
  return (await hotLoopCompiles(flags)).map((l) => l.match(/\(target (\w+)\)/)?.[1] ?? l);
}

Deno.test("PROXY_V8_FLAGS have V8 compile hot functions on the JS thread", async () => {
  const without = PROXY_V8_FLAGS.filter((f) => f !== "--no-concurrent-recompilation");
  assert.ok((await compileModes(without)).includes("kConcurrent"), "control compiles on workers");
  const modes = await compileModes(PROXY_V8_FLAGS);
  assert.ok(modes.length > 0, "the loop should be optimized");
  assert.deepEqual([...new Set(modes)], ["kSynchronous"]);
});

Deno.test("PROXY_V8_FLAGS keep V8's top tier at Maglev: TurboFan never compiles", async () => {
  const without = PROXY_V8_FLAGS.filter((f) => f !== "--no-opt");
  assert.ok((await compileTargets(without)).includes("TURBOFAN_JS"), "control reaches TurboFan");
  const targets = await compileTargets(PROXY_V8_FLAGS);
  assert.ok(targets.length > 0, "the loop should be optimized");
  assert.deepEqual([...new Set(targets)], ["MAGLEV"]);
});

/**
 * Keeps the last three of 30 rounds of 100,000 fresh objects (one allocation site) alive, with
 * V8's pretenuring decisions traced; returns the decisions to allocate a site in old space.
 */
async function pretenuredSites(flags: readonly string[]): Promise<string[]> {
  const code = `const kept = [];
function make(i) { return { a: i, b: [i, i + 1], c: "s" + i }; }
for (let round = 0; round < 30; round++) {
  const batch = [];
  for (let i = 0; i < 100_000; i++) batch.push(make(i));
  kept.push(batch);
  if (kept.length > 3) kept.shift();
}
console.log(kept.length);`;
  const trace = ["--trace-pretenuring", "--trace-pretenuring-statistics"];
  return (await evalTraced(flags, trace, code)).filter((l) => l.endsWith("=> tenure"));
}

Deno.test("PROXY_V8_FLAGS keep V8 from pretenuring objects of surviving allocation sites", async () => {
  const without = PROXY_V8_FLAGS.filter((f) => f !== "--no-allocation-site-pretenuring");
  assert.ok((await pretenuredSites(without)).length > 0, "control: V8 pretenures the sites");
  assert.deepEqual(await pretenuredSites(PROXY_V8_FLAGS), []);
});
