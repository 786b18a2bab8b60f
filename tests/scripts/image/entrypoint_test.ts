import assert from "node:assert/strict";
import { compileArgs, type PermissionSet } from "../../../scripts/build.ts";
import {
  entrypointScript,
  imageReference,
  programPaths,
  programRunArgs,
} from "../../../scripts/image/mod.ts";

const ROOT = new URL("../../../", import.meta.url).pathname;
const proxySet: PermissionSet =
  JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).permissions.proxy;
const APP = "/opt/deno-kube-proxy/app";

/** The arguments of `deno compile` that say how the program runs (flags, not output paths). */
function compiledRuntime(apiServers: string[]): string[] {
  const args = compileArgs({ permissions: proxySet, root: `${APP}/`, output: "x", apiServers });
  return args.filter((a) =>
    a.startsWith("--allow-") || a.startsWith("--v8-flags") || a === "--no-code-cache"
  );
}

Deno.test("programRunArgs() runs main.ts with the compiled binary's permissions and flags", () => {
  const args = programRunArgs({ permissions: proxySet, apiServers: ["10.0.0.1:6443"] });
  assert.equal(args[0], "run");
  assert.equal(args.at(-1), `${APP}/main.ts`);
  for (const flag of ["--cached-only", "--frozen", "--no-prompt", `--config=${APP}/deno.json`]) {
    assert.ok(args.includes(flag), flag);
  }
  const runtime = args.filter((a) =>
    a.startsWith("--allow-") || a.startsWith("--v8-flags") || a === "--no-code-cache"
  );
  assert.deepEqual(runtime, compiledRuntime(["10.0.0.1:6443"]));
  assert.ok(args.some((a) => a.startsWith("--allow-net=") && a.endsWith(",10.0.0.1:6443")));
});

Deno.test("programRunArgs() rejects a bad --api-server, naming it", () => {
  assert.throws(
    () => programRunArgs({ permissions: proxySet, apiServers: ["not a host"] }),
    /Invalid --api-server "not a host"/,
  );
});

Deno.test("entrypointScript() execs the vendored deno with the program's arguments last", async () => {
  const script = entrypointScript({ permissions: proxySet });
  const paths = programPaths();
  assert.ok(script.startsWith("#!/bin/sh\n"));
  assert.match(script, new RegExp(`^export DENO_DIR='${paths.denoDir}'$`, "m"));
  // The shell must hand exactly programRunArgs() and then "$@" to deno: ask sh itself.
  const dir = await Deno.makeTempDir();
  try {
    const fake = script.replace(`exec '${paths.deno}'`, `exec printf '%s\\n'`);
    await Deno.writeTextFile(`${dir}/entry`, fake);
    const out = await new Deno.Command("sh", { args: [`${dir}/entry`, "--v=2", "a b"] }).output();
    assert.equal(out.code, 0);
    const argv = new TextDecoder().decode(out.stdout).trimEnd().split("\n");
    assert.deepEqual(argv, [...programRunArgs({ permissions: proxySet }), "--v=2", "a b"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("imageReference() tags localhost/deno-kube-proxy with the version", () => {
  assert.equal(imageReference("0.1.0"), "localhost/deno-kube-proxy:0.1.0");
  assert.throws(() => imageReference("0.1.0 beta"), /Invalid image tag "0.1.0 beta"/);
});
