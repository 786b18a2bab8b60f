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
