import assert from "node:assert/strict";
import type { CommandRunner } from "../../lib/exec/mod.ts";
import { detectIptablesFlavour, iptablesBinaries } from "../../lib/netfilter/mod.ts";
import { createFakeIptables, type FakeIptables } from "../support/fake_iptables.ts";

Deno.test("detectIptablesFlavour() picks nft when kubelet's hint chain is in nft mangle", async () => {
  const fake = createFakeIptables();
  fake.restore("legacy", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\n-A INPUT -j A\nCOMMIT\n");
  fake.restore("nft", "IPv6", "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run), "nft");
});

Deno.test("detectIptablesFlavour() picks legacy when kubelet's canary is in legacy", async () => {
  const fake = createFakeIptables();
  fake.restore("nft", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\nCOMMIT\n");
  fake.restore("legacy", "IPv4", "*mangle\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run), "legacy");
});

Deno.test("detectIptablesFlavour() falls back to whichever has more rules, ties to nft", async () => {
  const fake = createFakeIptables();
  assert.equal(await detectIptablesFlavour(fake.run), "nft");
  fake.restore("legacy", "IPv6", "*filter\n-A INPUT -j ACCEPT\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run), "legacy");
  fake.restore("nft", "IPv4", "*filter\n-A INPUT -j ACCEPT\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run), "nft");
});

Deno.test("detectIptablesFlavour() never picks a flavour whose binaries are missing", async () => {
  for (const [missing, flavour] of [["nft", "legacy"], ["legacy", "nft"]] as const) {
    const fake = createFakeIptables({ missing: [missing] });
    assert.equal(await detectIptablesFlavour(fake.run), flavour);
  }
});

Deno.test("detectIptablesFlavour() finds a hint in any existing legacy table and creates none", async () => {
  const fake = createFakeIptables();
  fake.restore("nft", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\n-A INPUT -j A\nCOMMIT\n");
  // An older kubelet's canary in nat; legacy has no mangle table, which `-t mangle` would create.
  fake.restore("legacy", "IPv4", "*nat\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run), "legacy");
  assert.deepEqual(fake.legacyTables("IPv4"), ["nat"]);
  assert.deepEqual(fake.legacyTables("IPv6"), []);
});

/** The runner of a fake, counting the characters of save output it hands on. */
function countingSaves(fake: FakeIptables): { run: CommandRunner; chars: () => number } {
  let chars = 0;
  const run: CommandRunner = async (input) => {
    const out = await fake.run(input);
    if (input.cmd.endsWith("-save")) chars += out.stdout.length;
    return out;
  };
  return { run, chars: () => chars };
}

Deno.test("detectIptablesFlavour() keeps only the hint line of the whole legacy save", async () => {
  const fake = createFakeIptables();
  fake.restore("nft", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\n-A INPUT -j A\nCOMMIT\n");
  // A previous run's nat rules, listed before kubelet's mangle (newest table first).
  fake.restore("legacy", "IPv4", "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n");
  const nat = ["*nat", ":KUBE-SVC-A - [0:0]"];
  for (let i = 0; i < 500; i++) nat.push(`-A KUBE-SVC-A -s 10.0.${i >> 8}.${i & 255}/32 -j RETURN`);
  fake.restore("legacy", "IPv4", [...nat, "COMMIT", ""].join("\n"));
  const hinted = countingSaves(fake);
  assert.equal(await detectIptablesFlavour(hinted.run), "legacy");
  assert.equal(hinted.chars(), ":KUBE-IPTABLES-HINT - [0:0]\n".length);
  assert.deepEqual(fake.legacyTables("IPv4"), ["nat", "mangle"]);

  // No hint: the rule counts decide, from lines none of which is kept.
  const unhinted = createFakeIptables();
  unhinted.restore("legacy", "IPv6", [...nat, "COMMIT", ""].join("\n"));
  unhinted.restore("nft", "IPv4", "*filter\n-A INPUT -j ACCEPT\nCOMMIT\n");
  const counted = countingSaves(unhinted);
  assert.equal(await detectIptablesFlavour(counted.run), "legacy");
  assert.equal(counted.chars(), 0);
});

Deno.test("iptablesBinaries() names the binaries of each family and flavour", () => {
  assert.deepEqual(iptablesBinaries("IPv6", "legacy"), {
    iptables: "ip6tables-legacy",
    save: "ip6tables-legacy-save",
    restore: "ip6tables-legacy-restore",
  });
  assert.equal(iptablesBinaries("IPv4", "nft").restore, "iptables-nft-restore");
});
