import assert from "node:assert/strict";
import {
  apiServerHost,
  compileArgs,
  denortBinProblem,
  denortCachePath,
  denortUnavailableMessage,
  npmExcludePaths,
  type PermissionSet,
} from "../../scripts/build.ts";

const ROOT = new URL("../../", import.meta.url).pathname;
const proxySet: PermissionSet =
  JSON.parse(Deno.readTextFileSync(`${ROOT}deno.json`)).permissions.proxy;

function flagValues(args: readonly string[], flag: string): string[] | undefined {
  const arg = args.find((a) => a === flag || a.startsWith(`${flag}=`));
  if (arg === undefined) return undefined;
  return arg === flag ? [] : arg.slice(flag.length + 1).split(",");
}

Deno.test("compileArgs() grants exactly deno.json's proxy permission set", () => {
  const args = compileArgs({ permissions: proxySet, root: ROOT, output: "dist/deno-kube-proxy" });
  assert.deepEqual(args.slice(0, 2), ["compile", "--no-prompt"]);
  assert.deepEqual(flagValues(args, "--allow-run"), proxySet.run);
  assert.deepEqual(flagValues(args, "--allow-write"), proxySet.write);
  assert.deepEqual(flagValues(args, "--allow-net"), proxySet.net);
  assert.deepEqual(flagValues(args, "--allow-sys"), proxySet.sys);
  assert.deepEqual(flagValues(args, "--allow-env"), []);
  // Relative read paths are made absolute: the binary runs from anywhere.
  const read = flagValues(args, "--allow-read")!;
  assert.ok(read.includes(`${ROOT}deploy`), read.join(","));
  assert.ok(read.every((p) => p.startsWith("/")), read.join(","));
  assert.ok(!args.some((a) => a === "-A" || a.startsWith("--allow-all")));
  assert.deepEqual(args.slice(-3), ["--output", "dist/deno-kube-proxy", `${ROOT}main.ts`]);
});

Deno.test("compileArgs() pins --api-server hosts into the network permission only", () => {
  const args = compileArgs({
    permissions: { net: ["127.0.0.1"], read: ["/etc/kubernetes"] },
    root: ROOT,
    apiServers: ["10.0.0.1:6443", "https://api.example.com:8443/", "[fd00::1]:6443"],
    output: "out",
    target: "aarch64-unknown-linux-gnu",
  });
  assert.deepEqual(flagValues(args, "--allow-net"), [
    "127.0.0.1",
    "10.0.0.1:6443",
    "api.example.com:8443",
    "[fd00::1]:6443",
  ]);
  assert.deepEqual(flagValues(args, "--allow-read"), ["/etc/kubernetes"]);
  assert.deepEqual(args.slice(-4, -1), ["out", "--target", "aarch64-unknown-linux-gnu"]);
});

Deno.test("compileArgs() rejects bad API servers and permission entries it cannot translate", () => {
  for (const bad of ["", "a b", "host:99999", "http://", "-evil"]) {
    assert.throws(() => apiServerHost(bad), {
      message: `Invalid --api-server "${bad}": ` +
        'expected HOST[:PORT] or a URL such as "https://10.0.0.1:6443"',
    });
  }
  assert.throws(
    () => compileArgs({ permissions: { hrtime: true }, root: ROOT, output: "o" }),
    /Unknown permission "hrtime" in deno\.json/,
  );
  assert.throws(
    () => compileArgs({ permissions: { read: "/etc" }, root: ROOT, output: "o" }),
    /Invalid permission "read" "\/etc" in deno\.json: expected true, false or a list/,
  );
  assert.equal(
    flagValues(
      compileArgs({ permissions: { net: false }, root: ROOT, output: "o" }),
      "--allow-net",
    ),
    undefined,
  );
});

Deno.test("npmExcludePaths() finds bintrees' test folder in every cached version", () => {
  const cache = Deno.makeTempDirSync({ prefix: "bn-npm-" });
  try {
    for (const v of ["1.0.2", "1.0.1"]) {
      Deno.mkdirSync(`${cache}/registry.npmjs.org/bintrees/${v}/test/perf`, { recursive: true });
    }
    Deno.mkdirSync(`${cache}/registry.npmjs.org/bintrees/0.9.0/lib`, { recursive: true });
    const paths = npmExcludePaths(cache);
    assert.deepEqual(paths, [
      `${cache}/registry.npmjs.org/bintrees/1.0.1/test`,
      `${cache}/registry.npmjs.org/bintrees/1.0.2/test`,
    ]);
    const args = compileArgs({ permissions: {}, root: ROOT, output: "o", exclude: paths });
    assert.deepEqual(
      args.filter((a) => a.startsWith("--exclude=")),
      paths.map((p) => `--exclude=${p}`),
    );
    assert.deepEqual(npmExcludePaths(`${cache}/missing`), []);
  } finally {
    Deno.removeSync(cache, { recursive: true });
  }
});

Deno.test("denortBinProblem() refuses the deno CLI and missing files, accepts another file", () => {
  assert.match(
    denortBinProblem(Deno.execPath(), Deno.execPath()) ?? "",
    /is the deno CLI, not denort/,
  );
  assert.match(
    denortBinProblem("/nonexistent/denort", Deno.execPath()) ?? "",
    /^DENORT_BIN "\/nonexistent\/denort" is not a file/,
  );
  const file = Deno.makeTempFileSync({ prefix: "bn-denort-" });
  try {
    assert.equal(denortBinProblem(file, Deno.execPath()), null);
  } finally {
    Deno.removeSync(file);
  }
});

Deno.test("denortUnavailableMessage() says what is missing and how to set DENORT_BIN", () => {
  const text = denortUnavailableMessage("2.9.6", "x86_64-unknown-linux-gnu", "dns error");
  assert.match(
    text,
    /^Cannot compile: deno compile needs denort 2\.9\.6 for x86_64-unknown-linux-gnu/,
  );
  assert.match(
    text,
    /https:\/\/dl\.deno\.land\/release\/v2\.9\.6\/denort-x86_64-unknown-linux-gnu\.zip" \(dns error\)/,
  );
  assert.match(text, /DENORT_BIN=\$PWD\/denort deno task compile/);
  assert.equal(
    denortCachePath("/root/.cache/deno", "2.9.6", "x86_64-unknown-linux-gnu"),
    "/root/.cache/deno/dl/release/v2.9.6/denort-x86_64-unknown-linux-gnu.zip",
  );
});

Deno.test("deno task compile stops before compiling when DENORT_BIN is the deno CLI", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${ROOT}scripts/build.ts`, "--output", "/nonexistent/never-built"],
    env: { DENORT_BIN: Deno.execPath() },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 1, stderr);
  assert.match(stderr, /DENORT_BIN ".*" is the deno CLI, not denort/);
  assert.doesNotMatch(stderr, /^deno compile/m);
});
