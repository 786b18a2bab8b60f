import assert from "node:assert/strict";
import { createFakeIptables } from "./fake_iptables.ts";

Deno.test("createFakeIptables() aborts a table whose restore has a bad line", async () => {
  const fake = createFakeIptables();
  const out = await fake.run({
    cmd: "iptables-nft-restore",
    args: ["--noflush"],
    stdin: "*filter\n:A - [0:0]\nCOMMIT\n*nat\n:B - [0:0]\n-A B -j MISSING\nCOMMIT\n",
  });
  assert.equal(out.code, 1);
  assert.match(out.stderr, /line 6 failed/);
  assert.ok(fake.table("nft", "IPv4", "filter").has("A"));
  assert.ok(!fake.table("nft", "IPv4", "nat").has("B"));
});

Deno.test("createFakeIptables() refuses to delete a referenced or missing chain", async () => {
  const fake = createFakeIptables();
  fake.restore("legacy", "IPv4", "*nat\n:A - [0:0]\n-A PREROUTING -j A\nCOMMIT\n");
  const restore = (stdin: string) =>
    fake.run({ cmd: "iptables-legacy-restore", args: ["--noflush"], stdin });
  assert.equal((await restore("*nat\n-X A\nCOMMIT\n")).code, 1);
  assert.equal((await restore("*nat\n-X NOPE\nCOMMIT\n")).code, 1);
  assert.equal((await restore("*nat\n-D PREROUTING -j A\n-X A\nCOMMIT\n")).code, 0);
  assert.ok(!fake.table("legacy", "IPv4", "nat").has("A"));
});

Deno.test("createFakeIptables() answers -S for existing chains only and 127 for missing binaries", async () => {
  const fake = createFakeIptables({ missing: ["nft"] });
  fake.restore("legacy", "IPv6", "*mangle\n:C - [0:0]\nCOMMIT\n");
  assert.equal(
    (await fake.run({ cmd: "ip6tables-legacy", args: ["-w", "5", "-t", "mangle", "-S", "C"] }))
      .code,
    0,
  );
  assert.equal(
    (await fake.run({ cmd: "ip6tables-legacy", args: ["-t", "mangle", "-S", "D"] })).code,
    1,
  );
  assert.equal((await fake.run({ cmd: "iptables-nft-save", args: [] })).code, 127);
});
