import assert from "node:assert/strict";
import { ChainNameCache } from "../../../lib/backends/iptables/chain_name_cache.ts";
import { createIptablesProxier } from "../../../lib/backends/iptables/proxier.ts";
import { renderFullRestore } from "../../../lib/backends/iptables/restore_payload.ts";
import { chainHash, servicePortEndpointChain } from "../../../lib/backends/iptables/chain_names.ts";
import { renderIptables } from "../../../lib/backends/iptables/render.ts";
import type { IptablesRenderOptions } from "../../../lib/backends/iptables/render_options.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, sps, state, svc, variedServicePorts } from "./state_fixtures.ts";

const OPTS: IptablesRenderOptions = { clusterCIDRs: ["10.0.0.0/8", "fd00:10::/64"] };

Deno.test("ChainNameCache spells upstream's known chain names", () => {
  const cache = new ChainNameCache();
  for (let round = 0; round < 2; round++) {
    const chains = cache.servicePortChains("ns1/svc1:p80", "TCP");
    assert.equal(chains.cluster, "KUBE-SVC-XPGD46QRK7WJZT7O");
    assert.equal(chains.local, "KUBE-SVL-XPGD46QRK7WJZT7O");
    assert.equal(chains.external, "KUBE-EXT-XPGD46QRK7WJZT7O");
    assert.equal(chains.firewall, "KUBE-FW-XPGD46QRK7WJZT7O");
    assert.equal(
      cache.endpointChain("ns1/svc1:p80", "tcp", "10.180.0.1:80"),
      "KUBE-SEP-SXIVWICOYRO3J4NJ",
    );
  }
  assert.equal(cache.size, 2);
});

Deno.test("ChainNameCache hashes a service port's name only when a chain name is asked for", () => {
  const cache = new ChainNameCache();
  const chains = cache.servicePortChains("ns1/svc1:p80", "tcp");
  assert.equal(cache.size, 0);
  assert.equal(chains.local, "KUBE-SVL-XPGD46QRK7WJZT7O");
  assert.ok(cache.has("ns1/svc1:p80tcp"));
});

Deno.test("ChainNameCache.namesOf keeps a service port state's names with the state object", () => {
  const cache = new ChainNameCache({ maxEntries: 2 });
  const endpoints = [ep("10.180.0.1"), ep("10.180.0.2"), ep("10.180.0.3", 80, { ready: false })];
  const state = sps(svc(), endpoints);
  const names = cache.namesOf(state);
  assert.equal(names.chains.cluster, "KUBE-SVC-XPGD46QRK7WJZT7O");
  // Upstream's spelling, for each reachable endpoint only.
  assert.deepEqual(state.allReachableEndpoints, endpoints.slice(0, 2));
  assert.deepEqual(names.endpoints, [
    servicePortEndpointChain("ns1/svc1:p80", "tcp", "10.180.0.1:80"),
    servicePortEndpointChain("ns1/svc1:p80", "tcp", "10.180.0.2:80"),
  ]);
  // The hashes themselves were dropped from the two-entry memo; the state keeps its names.
  assert.ok(!cache.has("ns1/svc1:p80tcp10.180.0.1:80"));
  assert.equal(cache.namesOf(state), names);
  // An equal state of a later snapshot (a new object) gets the same names, looked up anew.
  const again = cache.namesOf(sps(svc(), endpoints));
  assert.notEqual(again, names);
  assert.equal(again.chains.cluster, names.chains.cluster);
  assert.deepEqual(again.endpoints, names.endpoints);
});

Deno.test("ChainNameCache never holds more than maxEntries and keeps the names in use", () => {
  const cache = new ChainNameCache({ maxEntries: 8 });
  const inUse = ["a", "b", "c"];
  for (let i = 0; i < 200; i++) {
    const churn = `churn-${i}`;
    assert.equal(cache.hash(churn), chainHash(churn));
    // The names every sync asks for: three of the four slots of a generation.
    if (i % 2 === 0) { for (const s of inUse) assert.equal(cache.hash(s), chainHash(s)); }
    assert.ok(cache.size <= 8, `size ${cache.size} after ${i + 1} inputs`);
  }
  for (const s of inUse) assert.ok(cache.has(s), `"${s}" was dropped while in use`);
  assert.ok(!cache.has("churn-0"), "a name unused for two generations is still held");
});

Deno.test("ChainNameCache.fit grows the bound so that every name of a render stays held", () => {
  const names = Array.from({ length: 20 }, (_, i) => `ns/svc${i}:p80tcp`);
  const small = new ChainNameCache({ maxEntries: 8 });
  for (let round = 0; round < 2; round++) for (const n of names) small.hash(n);
  assert.ok(names.some((n) => !small.has(n)), "20 names fit in a bound of 8");

  const fitted = new ChainNameCache({ maxEntries: 8 });
  fitted.fit(names.length);
  assert.ok(fitted.maxEntries >= 2 * names.length, `bound ${fitted.maxEntries}`);
  for (let round = 0; round < 2; round++) {
    for (const n of names) assert.equal(fitted.hash(n), chainHash(n));
  }
  for (const n of names) assert.ok(fitted.has(n), `"${n}" was dropped`);
  assert.equal(fitted.size, names.length);
  const bound = fitted.maxEntries;
  fitted.fit(3);
  assert.equal(fitted.maxEntries, bound, "fit shrank the bound");
});

Deno.test("a proxier keeps every chain name of its render, whatever bound its cache started with", async () => {
  const fake = createFakeIptables();
  const chainNames = new ChainNameCache({ maxEntries: 8 });
  const proxier = createIptablesProxier({
    family: "IPv4",
    flavour: "legacy",
    runner: (input) => fake.run(input),
    chainNames,
  });
  const ports = [];
  for (let i = 0; i < 30; i++) {
    const endpoints = [ep(`10.1.${i}.1`), ep(`10.1.${i}.2`), ep(`10.1.${i}.3`)];
    ports.push(sps(svc({ name: `s${i}`, clusterIP: `172.30.1.${i + 1}` }), endpoints));
  }
  await proxier.sync(state(ports));
  const chains = new Set(
    fake.save("legacy", "IPv4", "nat").match(/^:KUBE-(SVC|SEP)-\S+/gm) ?? [],
  );
  assert.equal(chains.size, 30 + 90);
  assert.ok(chainNames.size >= chains.size, `${chainNames.size} names held for ${chains.size}`);
});

Deno.test("ChainNameCache rejects a bound below 2", () => {
  for (const maxEntries of [0, 1, 2.5, Number.NaN]) {
    assert.throws(
      () => new ChainNameCache({ maxEntries }),
      (err: unknown) =>
        err instanceof RangeError &&
        err.message === `Invalid chain name cache maxEntries "${maxEntries}": ` +
            "expected an integer of at least 2",
    );
  }
});

Deno.test("renderIptables() renders the same bytes with a shared, a tiny or no ChainNameCache", () => {
  const shared = new ChainNameCache();
  const tiny = new ChainNameCache({ maxEntries: 2 });
  for (const family of ["IPv4", "IPv6"] as const) {
    for (const totalEndpoints of [undefined, 5000]) {
      const s = state(variedServicePorts(60, family), {
        family,
        ...(totalEndpoints === undefined ? {} : { totalEndpoints }),
      });
      const uncached = renderFullRestore(s, OPTS);
      assert.match(uncached, /KUBE-FW-[A-Z2-7]{16}/);
      assert.match(uncached, /KUBE-SVL-[A-Z2-7]{16}/);
      for (const chainNames of [shared, shared, tiny]) {
        assert.equal(renderFullRestore(s, { ...OPTS, chainNames }), uncached);
      }
    }
  }
  assert.ok(tiny.size <= 2);
  // s3 has endpoints and so chains; s0 has none, so its name was never hashed.
  assert.ok(shared.has("ns2/s3:p80tcp"));
  assert.ok(!shared.has("ns1/s0:p80tcp"));
  assert.equal(
    shared.endpointChain("ns1/svc1:p80", "tcp", "10.180.0.1:80"),
    servicePortEndpointChain("ns1/svc1:p80", "tcp", "10.180.0.1:80"),
  );
});

Deno.test("renderIptables() scope leaves out own chains but keeps top-level rules, names and counts", () => {
  const s = state(variedServicePorts(60));
  const all = renderIptables(s, OPTS);
  const keep = new Set(
    [...s.services].filter(([, p]) => p.allReachableEndpoints.length > 0).slice(0, 3)
      .map(([k]) => k),
  );
  assert.equal(keep.size, 3);
  const seen = new Map<string, readonly string[]>();
  const some = renderIptables(s, OPTS, {
    writeServiceChains: (key, chains) => {
      seen.set(key, chains);
      return keep.has(key);
    },
  });
  const written = (owner: string | null) => owner === null || keep.has(owner);
  assert.deepEqual(some.natRules, all.natRules.filter((l) => written(l.owner)));
  assert.deepEqual(some.natChains, all.natChains.filter((l) => written(l.owner)));
  assert.deepEqual(some.filterRules, all.filterRules);
  assert.deepEqual([...some.activeNatChains], [...all.activeNatChains]);
  assert.deepEqual(some.ruleCounts, all.ruleCounts);
  assert.ok(some.natRules.length < all.natRules.length / 2);
  // The chains offered for each service port are exactly the ones a full render declares.
  for (const [key, chains] of seen) {
    const declared = all.natChains.filter((l) => l.owner === key).map((l) => l.text);
    assert.deepEqual(chains.map((c) => `:${c} - [0:0]`), declared, key);
  }
});

Deno.test("renderIptables() counts the rules of each left-out service port exactly", () => {
  const optionSets: IptablesRenderOptions[] = [OPTS, { masqueradeAll: true }, {}];
  for (const family of ["IPv4", "IPv6"] as const) {
    const s = state(variedServicePorts(40, family), { family });
    for (const options of optionSets) {
      const expected = renderIptables(s, options).ruleCounts;
      assert.ok(expected.nat > 100);
      for (const key of s.services.keys()) {
        const one = renderIptables(s, options, { writeServiceChains: (k) => k !== key });
        assert.deepEqual(one.ruleCounts, expected, `${family} ${JSON.stringify(options)} ${key}`);
      }
    }
  }
});

Deno.test("createIptablesProxier() keeps the chain names in the cache it is given", async () => {
  const chainNames = new ChainNameCache();
  const proxier = createIptablesProxier({
    family: "IPv4",
    flavour: "legacy",
    runner: createFakeIptables().run,
    chainNames,
  });
  await proxier.sync(state([sps(svc(), [ep("10.180.0.1")])]));
  assert.ok(chainNames.has("ns1/svc1:p80tcp"));
  assert.ok(chainNames.has("ns1/svc1:p80tcp10.180.0.1:80"));
});
