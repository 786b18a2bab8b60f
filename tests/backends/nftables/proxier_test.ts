import assert from "node:assert/strict";
import { createNftablesProxier, hasChain } from "../../../lib/backends/nftables/proxier.ts";
import { renderNftables } from "../../../lib/backends/nftables/render.ts";
import { SYNC_STAMP } from "../../../lib/backends/nftables/_names.ts";
import { CommandError } from "../../../lib/exec/mod.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import { FakeNft } from "../../support/fake_nft.ts";
import { ep, key, sps, state, svc, variedServicePorts } from "../iptables/state_fixtures.ts";
import { modelText } from "./model_helpers.ts";

const OPTS = { clusterCIDRs: ["10.0.0.0/8"] };

function setup(checkPeriodMs = 30_000) {
  const fake = new FakeNft();
  let clock = 0;
  const proxier = createNftablesProxier({
    family: "IPv4",
    runner: fake.runner(),
    now: () => clock,
    checkPeriodMs,
    ...OPTS,
  });
  const table = () => modelText(fake.model("ip", "kube-proxy"));
  const want = (s: ProxyState) => modelText(renderNftables(s, OPTS).model);
  return { fake, proxier, table, want, tick: (ms: number) => (clock += ms) };
}

/** The state after moving one endpoint of svc1 (the only key marked changed). */
function moved(s: ProxyState, ip: string): ProxyState {
  const services = new Map(s.services);
  services.set(key(), sps(svc(), [ep(ip), ep("10.0.0.2")]));
  return { ...s, services, changed: new Set([key()]), forceFullSync: false };
}

Deno.test("createNftablesProxier() syncs full first, then only what changed", async () => {
  const { fake, proxier, table, want } = setup();
  const s1 = state([sps(svc(), [ep("10.0.0.1"), ep("10.0.0.2")]), ...variedServicePorts(30)]);
  const r1 = await proxier.sync(s1);
  assert.equal(r1.full, true);
  assert.equal(table(), want(s1));
  const s2 = moved(s1, "10.0.0.9");
  const r2 = await proxier.sync(s2);
  assert.equal(r2.full, false);
  // One endpoint-map element changes value: one delete, one add, nothing else.
  assert.deepEqual([r2.transaction.elementsAdded, r2.transaction.elementsDeleted], [1, 1]);
  assert.equal(r2.transaction.chainsWritten, 0);
  assert.equal(table(), want(s2));
  // Nothing changed: no nft run at all.
  const runs = fake.scripts.length;
  const r3 = await proxier.sync({ ...s2, changed: new Set() });
  assert.equal(r3.transaction.script, "");
  assert.equal(fake.scripts.length, runs);
});

Deno.test("createNftablesProxier() keeps the table on a failed nft -f and syncs full next", async () => {
  const { fake, proxier, table, want } = setup();
  let failures = 0;
  const counted = createNftablesProxier({
    family: "IPv4",
    runner: fake.runner(),
    metrics: { syncFailure: () => failures++, cleanupFailure: () => {} },
    ...OPTS,
  });
  const s1 = state([sps(svc(), [ep("10.0.0.1"), ep("10.0.0.2")])]);
  await counted.sync(s1);
  const before = table();
  fake.failNext = 1;
  await assert.rejects(counted.sync(moved(s1, "10.0.0.7")), CommandError);
  assert.equal(failures, 1);
  assert.equal(table(), before);
  const s3 = moved(s1, "10.0.0.8");
  const r = await counted.sync(s3);
  assert.equal(r.full, true);
  assert.equal(table(), want(s3));
  assert.ok(proxier !== undefined);
});

Deno.test("createNftablesProxier() recreates a table deleted behind its back within the check period", async () => {
  const { fake, proxier, table, want, tick } = setup(30_000);
  const s1 = state([sps(svc(), [ep("10.0.0.1"), ep("10.0.0.2")])]);
  await proxier.sync(s1);
  fake.apply("delete table ip kube-proxy");
  assert.equal(await proxier.rulesFlushed(), true);
  tick(1000);
  // Within the period the proxier does not look (a partial sync fails: the table is gone).
  await assert.rejects(proxier.sync(moved(s1, "10.0.0.3")), CommandError);
  const r = await proxier.sync(moved(s1, "10.0.0.4"));
  assert.equal(r.full, true);
  fake.apply("delete table ip kube-proxy");
  tick(30_000);
  const s5 = moved(s1, "10.0.0.5");
  const r5 = await proxier.sync(s5);
  assert.equal(r5.full, true);
  assert.equal(table(), want(s5));
  assert.equal(await proxier.rulesFlushed(), false);
});

Deno.test("createNftablesProxier() syncs full on forceFullSync and cleans both tables up", async () => {
  const { fake, proxier } = setup();
  const s1 = state([sps(svc(), [ep("10.0.0.1")])]);
  await proxier.sync(s1);
  assert.equal((await proxier.sync({ ...s1, forceFullSync: true })).full, true);
  await proxier.cleanup();
  assert.equal(fake.tables.size, 0);
  await assert.rejects(proxier.sync(state([], { family: "IPv6" })), RangeError);
});

Deno.test("hasChain() finds a chain only in the named table", () => {
  const listing = [
    "table ip other {",
    "\tchain services {",
    "\t}",
    "}",
    "table ip kube-proxy {",
    "\tchain nat-prerouting {",
    "\t\ttype nat hook prerouting priority dstnat; policy accept;",
    "\t}",
    "\tchain services {",
    "\t}",
    "}",
  ].join("\n");
  assert.equal(hasChain(listing, "ip", "kube-proxy", "services"), true);
  assert.equal(hasChain(listing, "ip6", "kube-proxy", "services"), false);
  assert.equal(
    hasChain(listing.replace(/table ip kube-proxy[^]*/, ""), "ip", "kube-proxy", "services"),
    false,
  );
});

Deno.test("createNftablesProxier() adopts a table that already holds its render after a restart", async () => {
  const { fake, proxier } = setup();
  const s1 = state([sps(svc(), [ep("10.0.0.1"), ep("10.0.0.2")]), ...variedServicePorts(30)]);
  await proxier.sync(s1);
  const s2 = moved(s1, "10.0.0.9");
  await proxier.sync(s2);
  const s3 = moved(s2, "10.0.0.8");
  await proxier.sync(s3);
  // A new process: the incrementally kept fingerprint equals the fresh render's.
  const runs = fake.scripts.length;
  const restarted = createNftablesProxier({ family: "IPv4", runner: fake.runner(), ...OPTS });
  const r = await restarted.sync({
    ...s3,
    forceFullSync: true,
    changed: new Set(s3.services.keys()),
  });
  assert.equal(r.adopted, true);
  assert.equal(fake.scripts.length, runs);
  // Then it goes on with partial syncs as usual.
  const r2 = await restarted.sync(moved(s3, "10.0.0.7"));
  assert.equal(r2.full, false);
  // A restart onto a table that differs rewrites it.
  const other = createNftablesProxier({ family: "IPv4", runner: fake.runner(), ...OPTS });
  const r3 = await other.sync({ ...s1, forceFullSync: true });
  assert.equal(r3.adopted, false);
  assert.equal(r3.full, true);
});

Deno.test("createNftablesProxier() partial syncs touch only the changed service port's objects", async () => {
  const { fake, proxier, table, want } = setup();
  const ports = variedServicePorts(60);
  const s1 = state(ports);
  await proxier.sync(s1);
  const before = fake.model("ip", "kube-proxy")!;
  // A ClientIP-affinity service port with endpoints owns chains and sets; move one endpoint.
  const sticky = ports.find((p) => p.info.stickyMaxAgeSeconds > 0 && p.allEndpoints.length > 1)!;
  const n = sticky.info.name;
  const stickyKey = key(n.namespace, n.name, n.port, sticky.info.protocol);
  const services = new Map(s1.services);
  const moved = sps(sticky.info, [ep("10.99.0.1", 8080), ...sticky.allEndpoints.slice(1)]);
  services.set(stickyKey, moved);
  const s2 = { ...s1, services, changed: new Set([stickyKey]), forceFullSync: false };
  const r = await proxier.sync(s2);
  assert.equal(r.full, false);
  assert.equal(table(), want(s2));

  // What the transaction may touch: the objects the old or new render of this one port owns.
  const own = (p: typeof sticky) => renderNftables(state([p]), OPTS).model;
  const shared = renderNftables(state([]), OPTS).model;
  const ownChains = new Set<string>();
  const ownSets = new Set<string>();
  const ownElements = new Set<string>();
  for (const m of [own(sticky), own(moved)]) {
    for (const c of m.chains.keys()) if (!shared.chains.has(c)) ownChains.add(c);
    for (const s of m.sets.values()) {
      if (!shared.sets.has(s.name)) ownSets.add(s.name);
      for (const k of s.elements.keys()) ownElements.add(`${s.name}\u0000${k}`);
    }
  }
  const touched = fake.touched;
  assert.ok(touched.chains.size > 0, "the sticky chains are rewritten");
  for (const c of touched.chains) assert.ok(ownChains.has(c), `touched chain ${c}`);
  // Besides them only the table's fingerprint (two elements) is rewritten.
  for (const s of touched.sets) {
    assert.ok(ownSets.has(s) || s === SYNC_STAMP, `touched set ${s}`);
  }
  for (const e of touched.elements) {
    assert.ok(ownElements.has(e) || e.startsWith(`${SYNC_STAMP}\u0000`), `touched element ${e}`);
  }
  // Every other chain of the table is exactly as before, rule for rule.
  const after = fake.model("ip", "kube-proxy")!;
  let untouched = 0;
  for (const [name, chain] of before.chains) {
    if (ownChains.has(name)) continue;
    assert.deepEqual(after.chains.get(name)?.rules, chain.rules, `chain ${name}`);
    untouched++;
  }
  assert.ok(untouched > touched.chains.size, `${untouched} chains left alone`);
  // The transaction's own counts (rewritten + deleted chains) agree with what the fake saw.
  assert.equal(
    r.transaction.chainsWritten + r.transaction.chainsDeleted,
    touched.chains.size,
  );
});

Deno.test("createNftablesProxier() rewrites the base chains when the ServiceCIDRs change", async () => {
  const { fake, proxier, table, want } = setup();
  const s1 = state([sps(svc(), [ep("10.0.0.1")])]);
  await proxier.sync(s1);
  const s2 = { ...s1, changed: new Set<string>(), serviceCIDRs: ["172.30.0.0/16"] };
  const r2 = await proxier.sync(s2);
  assert.equal(r2.full, true);
  assert.equal(table(), want(s2));
  assert.match(table(), /ip daddr \{ 172\.30\.0\.0\/16 \} drop comment/);
  const runs = fake.scripts.length;
  assert.equal((await proxier.sync({ ...s2, changed: new Set() })).transaction.script, "");
  assert.equal(fake.scripts.length, runs);
  const r4 = await proxier.sync({ ...s2, serviceCIDRs: [] });
  assert.equal(r4.full, true);
  assert.doesNotMatch(table(), /unallocated/);
});
