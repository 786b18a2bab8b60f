import assert from "node:assert/strict";
import { createIptablesProxier } from "../../lib/backends/iptables/proxier.ts";
import { IPVS_FILTER_CHAINS, IPVS_NAT_CHAINS } from "../../lib/backends/ipvs/render_iptables.ts";
import { IPTABLES_MODE_KEPT_IPTABLES } from "../../lib/backends/ipvs/leftovers.ts";
import { cleanupIptables, isCleanupChain } from "../../lib/netfilter/mod.ts";
import { computeCleanupPayload } from "../../lib/netfilter/_cleanup.ts";
import { KUBE_PROXY_CHAINS } from "../../lib/netfilter/_kube_chains.ts";
import { createFakeIptables } from "../support/fake_iptables.ts";
import { ep, sps, state, svc } from "../backends/iptables/state_fixtures.ts";

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

Deno.test("cleanupIptables() removes every chain and jump of ours but keeps the user's rules", async () => {
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
      // KUBE-FIREWALL is kubelet's chain (iptables mode keeps a copy of its rule): it stays.
      assert.ok(!/KUBE-(?!IPTABLES-HINT|FIREWALL\b)/.test(text), `${flavour} ${family}:\n${text}`);
    }
    assert.deepEqual(fake.table(flavour, "IPv4", "filter").get("INPUT")!.rules, [
      "-j KUBE-FIREWALL",
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

Deno.test("isCleanupChain() takes kube-proxy's chain names and prefixes only", () => {
  const ours = [
    ...KUBE_PROXY_CHAINS,
    "KUBE-SVC-XPGD46QRK7WJZT7O",
    "KUBE-SVL-XPGD46QRK7WJZT7O",
    "KUBE-EXT-XPGD46QRK7WJZT7O",
    "KUBE-FW-XPGD46QRK7WJZT7O",
    "KUBE-SEP-SXIVWICOYRO3J4NJ",
    "KUBE-XLB-XPGD46QRK7WJZT7O",
  ];
  for (const chain of ours) assert.ok(isCleanupChain(chain), chain);
  const theirs = [
    "KUBE-IPTABLES-HINT",
    "KUBE-KUBELET-CANARY",
    "KUBE-FIREWALL",
    "KUBE-MARK-DROP",
    "KUBE-FOO-OTHER",
    "KUBE-ROUTER-INPUT",
    "KUBE-POD-FW-ABCDEF",
    "KUBE-NWPLCY-ABCDEF",
    "KUBE-SERVICES-EXTRA",
    "INPUT",
  ];
  for (const chain of theirs) assert.ok(!isCleanupChain(chain), chain);
});

Deno.test("isCleanupChain() covers every chain iptables and IPVS mode write, kubelet's KUBE-FIREWALL aside", async () => {
  const fake = createFakeIptables();
  const proxier = createIptablesProxier({ family: "IPv4", flavour: "legacy", runner: fake.run });
  await proxier.sync(state([
    sps(svc({ nodePort: 30080, externalPolicyLocal: true, loadBalancerIPs: ["1.2.3.4"] }), [
      ep("10.180.0.1", 80, { isLocal: true }),
    ]),
    sps(
      svc({
        name: "fw",
        clusterIP: "172.30.0.42",
        loadBalancerIPs: ["1.2.3.5"],
        loadBalancerSourceRanges: ["5.6.7.0/24"],
      }),
      [ep("10.180.0.2")],
    ),
  ]));
  const chains = [...fake.save("legacy", "IPv4").matchAll(/^:(KUBE-\S+)/gm)].map((m) => m[1]!);
  for (const prefix of ["KUBE-SVC-", "KUBE-SVL-", "KUBE-EXT-", "KUBE-FW-", "KUBE-SEP-"]) {
    assert.ok(chains.some((c) => c.startsWith(prefix)), prefix);
  }
  for (const chain of [...chains, ...IPVS_NAT_CHAINS, ...IPVS_FILTER_CHAINS]) {
    assert.equal(isCleanupChain(chain), chain !== "KUBE-FIREWALL", chain);
  }
});

Deno.test("computeCleanupPayload() leaves other programs' chains, their jumps and the chains of ours they use", () => {
  const save = [
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-MARK-MASQ - [0:0]",
    ":KUBE-SVC-X - [0:0]",
    ":KUBE-SEP-Y - [0:0]",
    ":KUBE-FOO-OTHER - [0:0]",
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    "-A PREROUTING -j KUBE-FOO-OTHER",
    "-A KUBE-SERVICES -d 172.30.0.41/32 -j KUBE-SVC-X",
    "-A KUBE-SVC-X -j KUBE-SEP-Y",
    "-A KUBE-SEP-Y -j KUBE-MARK-MASQ",
    "-A KUBE-FOO-OTHER -s 10.9.0.0/16 -j KUBE-MARK-MASQ",
    "COMMIT",
    "*filter",
    ":INPUT ACCEPT [0:0]",
    ":KUBE-FIREWALL - [0:0]",
    ":KUBE-ROUTER-INPUT - [0:0]",
    "-A INPUT -j KUBE-FIREWALL",
    "-A INPUT -j KUBE-ROUTER-INPUT",
    "COMMIT",
  ].join("\n");
  assert.equal(
    computeCleanupPayload(save),
    [
      "*nat",
      ":KUBE-SERVICES - [0:0]",
      ":KUBE-SVC-X - [0:0]",
      ":KUBE-SEP-Y - [0:0]",
      '-D PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      "-X KUBE-SERVICES",
      "-X KUBE-SVC-X",
      "-X KUBE-SEP-Y",
      "COMMIT",
      "",
    ].join("\n"),
    "KUBE-MARK-MASQ stays: KUBE-FOO-OTHER jumps to it",
  );
});

Deno.test("computeCleanupPayload() for iptables mode reads past its own service chains and removes what it would have removed", () => {
  // IPVS mode's leftovers beside iptables mode's chains, and a KUBE-XLB- chain of an older
  // release that still jumps to one of them.
  const save = [
    "*nat",
    ":PREROUTING ACCEPT [0:0]",
    ":KUBE-SERVICES - [0:0]",
    ":KUBE-MARK-MASQ - [0:0]",
    ":KUBE-LOAD-BALANCER - [0:0]",
    ":KUBE-NODE-PORT - [0:0]",
    ":KUBE-XLB-OLD - [0:0]",
    ":KUBE-SVC-X - [0:0]",
    ":KUBE-SEP-Y - [0:0]",
    ":KUBE-EXT-X - [0:0]",
    '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    "-A KUBE-SERVICES -d 172.30.0.41/32 -j KUBE-SVC-X",
    "-A KUBE-NODE-PORT -j KUBE-LOAD-BALANCER",
    "-A KUBE-XLB-OLD -j KUBE-LOAD-BALANCER",
    "-A KUBE-SVC-X -j KUBE-SEP-Y",
    "-A KUBE-EXT-X -j KUBE-SVC-X",
    "-A KUBE-SEP-Y -s 10.0.0.2/32 -j KUBE-MARK-MASQ",
    "-A KUBE-SEP-Y -p tcp -m tcp -j DNAT --to-destination 10.0.0.2:80",
    "COMMIT",
  ].join("\n");
  const payload = computeCleanupPayload(save, IPTABLES_MODE_KEPT_IPTABLES);
  assert.ok(payload !== null);
  const lines = payload.split("\n");
  assert.ok(lines.includes("-X KUBE-NODE-PORT"), payload);
  // The service chains stay untouched; KUBE-LOAD-BALANCER stays because KUBE-XLB-OLD (an older
  // release's chain, still read) jumps to it.
  assert.ok(
    !lines.some((l) => /KUBE-(SVC|SEP|EXT)-|KUBE-LOAD-BALANCER|KUBE-MARK-MASQ/.test(l)),
    payload,
  );
  // A service chain that jumped to a chain that goes would keep it: iptables mode's never do,
  // so the same input with every service chain's rules removed gives the same payload.
  const bare = save.split("\n").filter((l) => !/^-A KUBE-(SVC|SEP|EXT)-/.test(l)).join("\n");
  assert.equal(computeCleanupPayload(bare, IPTABLES_MODE_KEPT_IPTABLES), payload);
});

Deno.test("cleanupIptables() for iptables mode drops its own service chains' lines as it reads the save", async () => {
  const fake = createFakeIptables();
  fake.restore(
    "legacy",
    "IPv4",
    "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-SVC-X - [0:0]\n:KUBE-SEP-Y - [0:0]\n" +
      ":KUBE-NODE-PORT - [0:0]\n-A KUBE-SERVICES -d 172.30.0.41/32 -j KUBE-SVC-X\n" +
      "-A KUBE-SVC-X -j KUBE-SEP-Y\n-A KUBE-SEP-Y -j DNAT --to-destination 10.0.0.2:80\nCOMMIT\n",
  );
  // What the cleanup was handed of each save: the real runner keeps only what stdoutKeep accepts.
  const received: string[] = [];
  const run: typeof fake.run = async (input) => {
    const out = await fake.run(input);
    if (input.cmd.endsWith("-save")) received.push(out.stdout);
    return out;
  };
  await cleanupIptables(run, undefined, IPTABLES_MODE_KEPT_IPTABLES);
  const read = received.join("");
  assert.ok(read.includes("-A KUBE-SERVICES -d 172.30.0.41/32 -j KUBE-SVC-X"), read);
  assert.ok(!/KUBE-(SVC|SEP)-/.test(read.replace(/-j KUBE-SVC-X/g, "")), read);
  const nat = fake.table("legacy", "IPv4", "nat");
  assert.deepEqual([...nat.keys()].filter((c) => c.startsWith("KUBE-")).sort(), [
    "KUBE-SEP-Y",
    "KUBE-SERVICES",
    "KUBE-SVC-X",
  ]);
  assert.deepEqual(nat.get("KUBE-SEP-Y")!.rules, ["-j DNAT --to-destination 10.0.0.2:80"]);
});
