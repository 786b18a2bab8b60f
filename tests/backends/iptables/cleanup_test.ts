import assert from "node:assert/strict";
import {
  cleanupIptables,
  computeCleanupPayload,
  createIptablesProxier,
} from "../../../lib/backends/iptables/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

const USER_RULES =
  '*filter\n-A INPUT -s 203.0.113.2 -m comment --comment "user rule" -j ACCEPT\nCOMMIT\n' +
  "*nat\n:USER-CHAIN - [0:0]\n-A PREROUTING -s 203.0.113.2 -j USER-CHAIN\nCOMMIT\n" +
  "*mangle\n:KUBE-IPTABLES-HINT - [0:0]\nCOMMIT\n";

Deno.test("computeCleanupPayload() deletes jumps, then flushes and deletes KUBE chains", () => {
  const save = [
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-SVC-X - [0:0]",
    ":USER - [0:0]",
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    "-A PREROUTING -s 203.0.113.2/32 -j USER",
    "-A KUBE-SERVICES -d 172.30.0.41/32 -j KUBE-SVC-X",
    "COMMIT",
    "*raw",
    ":PREROUTING ACCEPT [0:0]",
    "COMMIT",
  ].join("\n");
  assert.equal(
    computeCleanupPayload(save),
    [
      "*nat",
      ":KUBE-SERVICES - [0:0]",
      ":KUBE-SVC-X - [0:0]",
      '-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      "-X KUBE-SERVICES",
      "-X KUBE-SVC-X",
      "COMMIT",
      "",
    ].join("\n"),
  );
  assert.equal(computeCleanupPayload("*filter\n:INPUT ACCEPT [0:0]\nCOMMIT\n"), null);
});

Deno.test("cleanupIptables() removes every KUBE chain and jump but keeps the user's rules", async () => {
  const fake = createFakeIptables();
  for (const flavour of ["legacy", "nft"] as const) {
    fake.restore(flavour, "IPv4", USER_RULES);
    const proxier = createIptablesProxier({ family: "IPv4", flavour, runner: fake.run });
    await proxier.sync(state([sps(svc({ nodePort: 30080 }), [ep("10.180.0.1")])]));
    const v6 = createIptablesProxier({ family: "IPv6", flavour, runner: fake.run });
    await v6.sync(
      state([sps(svc({ clusterIP: "fd00:30::41" }), [ep("fd00:10::1")])], { family: "IPv6" }),
    );
  }
  await cleanupIptables(fake.run);
  await cleanupIptables(fake.run);
  for (const flavour of ["legacy", "nft"]) {
    for (const family of ["IPv4", "IPv6"] as const) {
      const text = fake.save(flavour, family);
      assert.ok(!/KUBE-(?!IPTABLES-HINT)/.test(text), `${flavour} ${family}:\n${text}`);
    }
    assert.deepEqual(fake.table(flavour, "IPv4", "filter").get("INPUT")!.rules, [
      '-s 203.0.113.2 -m comment --comment "user rule" -j ACCEPT',
    ]);
    assert.deepEqual(fake.table(flavour, "IPv4", "nat").get("PREROUTING")!.rules, [
      "-s 203.0.113.2 -j USER-CHAIN",
    ]);
    assert.ok(fake.table(flavour, "IPv4", "mangle").has("KUBE-IPTABLES-HINT"));
  }
});

Deno.test("cleanupIptables() is fine when nothing is there or a flavour is missing", async () => {
  await cleanupIptables(createFakeIptables().run);
  await cleanupIptables(createFakeIptables({ missing: ["legacy", "nft"] }).run);
});

Deno.test("cleanupIptables() tries everything, then throws the first failure", async () => {
  const fake = createFakeIptables();
  fake.restore("legacy", "IPv4", "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n");
  fake.restore("nft", "IPv4", "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n");
  fake.failNextRestore();
  await assert.rejects(cleanupIptables(fake.run), /iptables-legacy-restore/);
  assert.ok(!fake.table("nft", "IPv4", "nat").has("KUBE-SERVICES"));
});
