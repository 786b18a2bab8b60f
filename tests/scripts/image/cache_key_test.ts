import assert from "node:assert/strict";
import { baseRootfsKey, cacheKey, mmdebstrapArgs } from "../../../scripts/image/mod.ts";

Deno.test("cacheKey() ignores key order and changes with any value", () => {
  assert.equal(cacheKey({ a: 1, b: ["x"] }), cacheKey({ b: ["x"], a: 1 }));
  assert.notEqual(cacheKey({ a: 1, b: ["x"] }), cacheKey({ a: 1, b: ["y"] }));
  assert.match(cacheKey({}), /^[0-9a-f]{16}$/);
});

Deno.test("baseRootfsKey() changes with the packages, suite, mirror and variant only", () => {
  const spec = { packages: ["iptables", "procps"] };
  const key = baseRootfsKey(spec);
  assert.equal(key, baseRootfsKey({ ...spec, suite: "bookworm", variant: "essential" }));
  assert.equal(key, baseRootfsKey({ packages: ["iptables"], extraPackages: ["procps"] }));
  for (
    const other of [
      { packages: ["iptables"] },
      { ...spec, suite: "trixie" },
      { ...spec, mirror: "http://mirror.example/debian" },
      { ...spec, variant: "minbase" },
    ]
  ) {
    assert.notEqual(baseRootfsKey(other), key, JSON.stringify(other));
  }
});

Deno.test("mmdebstrapArgs() installs exactly the packages, without docs or host files", () => {
  const args = mmdebstrapArgs(
    { packages: ["iptables", "kmod"], extraPackages: ["systemd", "kmod"] },
    "/c/base.tar",
  );
  assert.ok(args.includes("--variant=essential"));
  assert.deepEqual(args.filter((a) => a.startsWith("--include=")), [
    "--include=iptables,kmod,systemd",
  ]);
  assert.ok(args.includes("--dpkgopt=path-exclude=/usr/share/doc/*"));
  assert.ok(args.some((a) => a.startsWith("--customize-hook=") && a.includes("resolv.conf")));
  assert.deepEqual(args.slice(-3), ["bookworm", "/c/base.tar", "http://deb.debian.org/debian"]);
});
