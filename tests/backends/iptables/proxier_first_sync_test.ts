/** The proxier's first sync: its start-up reads, and what it leaves in place at a restart. */
import assert from "node:assert/strict";
import { canonicalRule } from "../../../lib/netfilter/mod.ts";
import { createFakeIptables, type FakeIptables } from "../../support/fake_iptables.ts";
import { fakeWithStaleChains, SEP1, setup, SVC1, twoEndpoints } from "./proxier_fixtures.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

Deno.test("IptablesProxier.prepareFirstSync() reads the tables once, before the first sync, which uses that read", async () => {
  const fake = fakeWithStaleChains();
  const { proxier, chains, rulesOf } = setup(fake);
  const kinds = () => fake.calls.map((c) => c.cmd.replace(/^iptables-legacy-?/, "") || "iptables");
  proxier.prepareFirstSync!();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(kinds(), ["save", "save"], "the reads start at once, before any sync");
  await proxier.sync(twoEndpoints());
  assert.deepEqual(kinds(), ["save", "save", "restore"], "the first sync reads nothing more");
  assert.ok(!chains().some((c) => c.includes("OLD")), "stale chains found by that read go");
  assert.deepEqual(rulesOf("PREROUTING"), [
    '-m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
  ]);
  proxier.prepareFirstSync!();
  await new Promise((r) => setTimeout(r, 0));
  assert.deepEqual(kinds().slice(3), [], "after the first sync it does nothing");
  for (const op of ["-F", "-X"]) {
    assert.equal((await fake.run({ cmd: "iptables-legacy", args: ["-t", "mangle", op] })).code, 0);
  }
  assert.equal(await proxier.rulesFlushed(), true, "the canary is gone");
  await proxier.sync(state([sps(svc(), [ep("10.180.0.3")])], { changed: [] }));
  assert.deepEqual(
    kinds().slice(6).sort(),
    ["restore", "save", "save"],
    "a later full sync after a flush reads for itself",
  );
});

/** The fake's nat rules as the kernel prints them back (what iptables -S lists after a restore). */
function printedAsKernel(fake: FakeIptables, flavour: "legacy" | "nft"): void {
  for (const [chain, c] of fake.table(flavour, "IPv4", "nat")) {
    c.rules = c.rules.map((spec) => {
      const printed = canonicalRule(`-A ${chain} ${spec}`, "IPv4");
      assert.ok(printed !== undefined, spec);
      return printed.slice(`-A ${chain} `.length);
    });
  }
}

const lastRestoreInput = (fake: FakeIptables) =>
  fake.calls.findLast((c) => c.cmd.endsWith("-restore"))!.stdin ?? "";

Deno.test("IptablesProxier with iptables-nft leaves alone, at a restart, the chains a previous run left as they render", async () => {
  const fake = createFakeIptables();
  const svc3 = sps(svc({ name: "svc3", clusterIP: "172.30.0.43" }), [ep("10.180.0.4")]);
  const two = state([
    sps(svc(), [ep("10.180.0.1"), ep("10.180.0.2")]),
    sps(svc({ name: "svc2", clusterIP: "172.30.0.42" }), [ep("10.180.0.3")]),
    svc3,
  ]);
  await setup(fake, "IPv4", "nft").proxier.sync(two);
  printedAsKernel(fake, "nft");
  const before = [...fake.table("nft", "IPv4", "nat")].map(([c, v]) => [c, [...v.rules]]);

  const { proxier, rulesOf } = setup(fake, "IPv4", "nft");
  const reads = proxier.prepareFirstSync!();
  assert.ok(reads instanceof Promise, "the app waits for the whole nat read");
  await reads;
  const report = await proxier.sync(two);
  assert.equal(report.full, true);
  const input = lastRestoreInput(fake);
  assert.doesNotMatch(input, /KUBE-(SVC|SEP)-|-A KUBE-SERVICES/, "nothing a previous run left");
  assert.match(input, /\*filter/, "the filter table is written whole, as on any first sync");
  assert.deepEqual(report.written, { nat: 0, filter: report.counts.filter }, "rules written");
  assert.deepEqual([...fake.table("nft", "IPv4", "nat")].map(([c, v]) => [c, v.rules]), before);

  // A restart after svc1's endpoint moved and svc2 went: svc1's chains, and svc2's deleted.
  const moved = state([sps(svc(), [ep("10.180.0.1"), ep("10.180.0.9")]), svc3]);
  const next = setup(fake, "IPv4", "nft");
  await next.proxier.prepareFirstSync!();
  await next.proxier.sync(moved);
  const changed = lastRestoreInput(fake);
  assert.match(changed, new RegExp(`:${SVC1} `));
  assert.match(changed, /-A KUBE-SERVICES /, "KUBE-SERVICES lost svc2's rule");
  assert.match(changed, /-X KUBE-SVC-/, "svc2's chains are deleted");
  assert.doesNotMatch(changed, /10\.180\.0\.4/, "svc3's chains are left alone");
  assert.match(rulesOf(SVC1)!.join("\n"), /KUBE-SEP-/);
  assert.equal(chainsWith(fake, "10.180.0.3"), 0);
});

Deno.test("IptablesProxier with iptables-legacy reads at start only what a full sync needs, and writes everything", async () => {
  const fake = createFakeIptables();
  await setup(fake).proxier.sync(twoEndpoints());
  printedAsKernel(fake, "legacy");
  const { proxier } = setup(fake);
  assert.equal(proxier.prepareFirstSync!(), undefined);
  await proxier.sync(twoEndpoints());
  assert.match(lastRestoreInput(fake), new RegExp(`:${SEP1} `));
});

/** How many nat rules mention `text`. */
function chainsWith(fake: FakeIptables, text: string): number {
  return [...fake.table("nft", "IPv4", "nat").values()].flatMap((c) => c.rules).filter((r) =>
    r.includes(text)
  ).length;
}

Deno.test("IptablesProxier with iptables-legacy starts its first restore before its start-up reads end", async () => {
  const fake = createFakeIptables();
  let release = () => {};
  const held = new Promise<void>((r) => release = r);
  const started: string[] = [];
  const { proxier } = setup({
    ...fake,
    run: async (input) => {
      started.push(input.cmd);
      if (input.cmd.endsWith("-save")) await held;
      return fake.run(input);
    },
  });
  proxier.prepareFirstSync!();
  const sync = proxier.sync(twoEndpoints());
  for (let i = 0; i < 10 && !started.includes("iptables-legacy-restore"); i++) {
    await new Promise((r) => setTimeout(r, 0));
  }
  assert.ok(started.includes("iptables-legacy-restore"), "the restore runs while nat is read");
  release();
  assert.equal((await sync).full, true);
});
