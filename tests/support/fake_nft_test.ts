import assert from "node:assert/strict";
import { FakeNft } from "./fake_nft.ts";

const BASE = [
  "add table ip t",
  "add chain ip t a",
  "add map ip t m { type ipv4_addr : verdict ; }",
  "add element ip t m { 10.0.0.1 : goto a }",
].join("\n");

Deno.test("FakeNft applies a script atomically: a bad line changes nothing", () => {
  const fake = new FakeNft();
  fake.apply(BASE);
  const before = fake.list("ip", "t");
  assert.throws(
    () => fake.apply("add chain ip t b\ndelete element ip t m { 10.0.0.9 }"),
    /No such file/,
  );
  assert.equal(fake.list("ip", "t"), before);
});

Deno.test("FakeNft refuses what the kernel refuses", () => {
  const fake = new FakeNft();
  fake.apply(BASE);
  assert.throws(() => fake.apply("delete chain ip t a"), /referenced/);
  assert.throws(() => fake.apply("add element ip t m { 10.0.0.1 : drop }"), /File exists/);
  assert.throws(() => fake.apply("add rule ip t a goto nowhere"), /no chain/);
  assert.throws(() => fake.apply("add rule ip t a ip daddr @nope drop"), /no set/);
  assert.throws(() => fake.apply("delete map ip t nope"), /No such file/);
  assert.throws(
    () => fake.apply("add chain ip t a { type nat hook output priority -100 ; }"),
    /another hook/,
  );
  assert.throws(() => fake.apply("frobnicate"), /syntax error/);
  fake.apply("add rule ip t a ip daddr @m drop");
  assert.throws(() => fake.apply("delete map ip t m"), /busy/);
  // Deleting in the right order works in one transaction.
  fake.apply(
    "delete element ip t m { 10.0.0.1 }\nflush chain ip t a\ndelete map ip t m\ndelete chain ip t a",
  );
  assert.equal(fake.list("ip", "t"), "table ip t # \n");
});

Deno.test("FakeNft's runner serves nft -f, --check, list tables and injected failures", async () => {
  const fake = new FakeNft();
  const run = fake.runner();
  assert.equal((await run({ cmd: "nft", args: ["--check", "-f", "-"], stdin: BASE })).code, 0);
  assert.equal(fake.tables.size, 0);
  assert.equal((await run({ cmd: "nft", args: ["-f", "-"], stdin: BASE })).code, 0);
  assert.equal((await run({ cmd: "nft", args: ["list", "tables"] })).stdout, "table ip t\n");
  fake.failNext = 1;
  const failed = await run({ cmd: "nft", args: ["-f", "-"], stdin: "delete table ip t" });
  assert.equal(failed.code, 1);
  assert.equal(fake.tables.size, 1);
  assert.equal((await run({ cmd: "iptables", args: [] })).code, 127);
});
