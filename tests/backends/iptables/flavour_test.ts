import assert from "node:assert/strict";
import { detectIptablesFlavour, iptablesBinaries } from "../../../lib/backends/iptables/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";

Deno.test("detectIptablesFlavour() picks nft when kubelet's hint chain is in nft mangle", async () => {
  const fake = createFakeIptables();
  fake.restore("legacy", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\n-A INPUT -j A\nCOMMIT\n");
  fake.restore("nft", "IPv6", "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run, fake.legacyTables), "nft");
});

Deno.test("detectIptablesFlavour() picks legacy when kubelet's canary is in legacy", async () => {
  const fake = createFakeIptables();
  fake.restore("nft", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\nCOMMIT\n");
  fake.restore("legacy", "IPv4", "*mangle\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run, fake.legacyTables), "legacy");
});

Deno.test("detectIptablesFlavour() falls back to whichever has more rules, ties to nft", async () => {
  const fake = createFakeIptables();
  assert.equal(await detectIptablesFlavour(fake.run, fake.legacyTables), "nft");
  fake.restore("legacy", "IPv6", "*filter\n-A INPUT -j ACCEPT\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run, fake.legacyTables), "legacy");
  fake.restore("nft", "IPv4", "*filter\n-A INPUT -j ACCEPT\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run, fake.legacyTables), "nft");
});

Deno.test("detectIptablesFlavour() never picks a flavour whose binaries are missing", async () => {
  for (const [missing, flavour] of [["nft", "legacy"], ["legacy", "nft"]] as const) {
    const fake = createFakeIptables({ missing: [missing] });
    assert.equal(await detectIptablesFlavour(fake.run, fake.legacyTables), flavour);
  }
});

Deno.test("detectIptablesFlavour() finds a hint in any existing legacy table and creates none", async () => {
  const fake = createFakeIptables();
  fake.restore("nft", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\n-A INPUT -j A\nCOMMIT\n");
  // An older kubelet's canary in nat; legacy has no mangle table, which `-t mangle` would create.
  fake.restore("legacy", "IPv4", "*nat\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n");
  assert.equal(await detectIptablesFlavour(fake.run, fake.legacyTables), "legacy");
  assert.deepEqual(await fake.legacyTables("IPv4"), ["nat"]);
  assert.deepEqual(await fake.legacyTables("IPv6"), []);
});

Deno.test("detectIptablesFlavour() reads the whole legacy save when its tables cannot be listed", async () => {
  const fake = createFakeIptables();
  fake.restore("nft", "IPv4", "*filter\n:A - [0:0]\n-A INPUT -j A\n-A INPUT -j A\nCOMMIT\n");
  fake.restore("legacy", "IPv6", "*filter\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n");
  const unknown = () => Promise.resolve(undefined);
  assert.equal(await detectIptablesFlavour(fake.run, unknown), "legacy");
  assert.equal(await detectIptablesFlavour(fake.run, () => Promise.resolve([])), "nft");
});

Deno.test("iptablesBinaries() names the binaries of each family and flavour", () => {
  assert.deepEqual(iptablesBinaries("IPv6", "legacy"), {
    iptables: "ip6tables-legacy",
    save: "ip6tables-legacy-save",
    restore: "ip6tables-legacy-restore",
  });
  assert.equal(iptablesBinaries("IPv4", "nft").restore, "iptables-nft-restore");
});
