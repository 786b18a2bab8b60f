import assert from "node:assert/strict";
import {
  cleanupNftables,
  deleteTableScript,
  KUBE_PROXY_TABLE,
  parseNftTables,
} from "../../../lib/backends/nftables/cleanup.ts";
import { CommandError } from "../../../lib/exec/mod.ts";
import { createFakeNetadmin } from "../../support/fake_netadmin.ts";

/** A node after nftables mode ran, next to tables of the admin's own firewall. */
function seededNode() {
  const fake = createFakeNetadmin();
  fake.nftTables.set("ip kube-proxy", new Set(["services", "nat-prerouting"]));
  fake.nftTables.set("ip6 kube-proxy", new Set(["services"]));
  fake.nftTables.set("inet filter", new Set(["input"]));
  fake.nftTables.set("ip nat", new Set(["postrouting"]));
  fake.nftTables.set("inet kube-proxy", new Set(["input"]));
  return fake;
}

Deno.test("parseNftTables() reads family and name from each `table` line", () => {
  assert.deepEqual(
    parseNftTables("table ip kube-proxy\ntable ip6 kube-proxy\ntable inet filter\n\n"),
    [
      { family: "ip", name: KUBE_PROXY_TABLE },
      { family: "ip6", name: KUBE_PROXY_TABLE },
      { family: "inet", name: "filter" },
    ],
  );
  assert.deepEqual(parseNftTables(""), []);
});

Deno.test("cleanupNftables() deletes the ip and ip6 kube-proxy tables and nothing else", async () => {
  const fake = seededNode();
  await cleanupNftables(fake.run);
  assert.deepEqual([...fake.nftTables.keys()].sort(), [
    "inet filter",
    "inet kube-proxy",
    "ip nat",
  ], "other tables (and an inet table nftables mode never creates) stay");
});

Deno.test("cleanupNftables() succeeds on a node without our tables, and when run twice", async () => {
  const fake = seededNode();
  await cleanupNftables(fake.run);
  await cleanupNftables(fake.run);
  const empty = createFakeNetadmin();
  await cleanupNftables(empty.run);
  assert.equal(empty.nftTables.size, 0);
});

Deno.test("cleanupNftables() treats a missing nft binary as nothing to clean", async () => {
  const fake = createFakeNetadmin({ missing: ["nft"] });
  await assert.doesNotReject(() => cleanupNftables(fake.run));
});

Deno.test("cleanupNftables() still deletes the other family when one table cannot be deleted, then throws", async () => {
  const fake = seededNode();
  fake.nftOwnedTables.add("ip kube-proxy");
  await assert.rejects(
    () => cleanupNftables(fake.run),
    (err) =>
      err instanceof CommandError && err.cmd === "nft" && err.args.join(" ") === "-f -" &&
      /not permitted/.test(err.stderr),
  );
  assert.ok(fake.nftTables.has("ip kube-proxy"), "the owned table is still there");
  assert.ok(!fake.nftTables.has("ip6 kube-proxy"), "the ip6 table was deleted anyway");
});

Deno.test("cleanupNftables() succeeds when the tables are absent, without listing the ruleset", async () => {
  const fake = createFakeNetadmin();
  fake.nftTables.set("inet filter", new Set(["input"]));
  await cleanupNftables(fake.run);
  assert.deepEqual([...fake.nftTables.keys()], ["inet filter"], "nothing added, nothing removed");
  // `nft list tables` loads every set element on nft 1.0.x: cleanup must not need it.
  assert.ok(!fake.calls.some((c) => c.args.join(" ") === "list tables"));
});

Deno.test("cleanupNftables() treats a kernel without nf_tables as nothing to clean", async () => {
  const fake = createFakeNetadmin({ nftables: false });
  await assert.doesNotReject(() => cleanupNftables(fake.run));
});

Deno.test("deleteTableScript() removes a family's table whether or not it exists", async () => {
  const fake = createFakeNetadmin();
  fake.nftTables.set("ip kube-proxy", new Set(["services"]));
  fake.nftTables.set("ip6 kube-proxy", new Set(["services"]));
  for (let i = 0; i < 2; i++) {
    const out = await fake.run({ cmd: "nft", args: ["-f", "-"], stdin: deleteTableScript("ip") });
    assert.equal(out.code, 0, out.stderr);
    assert.deepEqual([...fake.nftTables.keys()], ["ip6 kube-proxy"]);
  }
});
