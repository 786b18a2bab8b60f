import assert from "node:assert/strict";
import { createIptablesProxier } from "../../../lib/backends/iptables/proxier.ts";
import {
  chainDigests,
  changedChainLines,
  linesByChain,
} from "../../../lib/backends/iptables/top_level_chains.ts";
import { parseIptablesSave } from "../../../lib/netfilter/mod.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, key, sps, state, svc } from "./state_fixtures.ts";

Deno.test("changedChainLines() keeps the chains whose lines differ, declaration first", () => {
  const before = linesByChain([":A - [0:0]", ":B - [0:0]", "-A A -j X", "-A B -j Y"]);
  const after = linesByChain([":A - [0:0]", ":B - [0:0]", "-A A -j X", "-A B -j Z"]);
  assert.deepEqual(changedChainLines(after, chainDigests(after), chainDigests(before)), [
    ":B - [0:0]",
    "-A B -j Z",
  ]);
  assert.deepEqual(changedChainLines(after, chainDigests(after), chainDigests(after)), []);
  assert.deepEqual(changedChainLines(after, chainDigests(after), new Map()), [
    ":A - [0:0]",
    "-A A -j X",
    ":B - [0:0]",
    "-A B -j Z",
  ]);
});

/** Each chain's rules in order, chains sorted by name (the fake keeps creation order). */
function chains(saved: string): [string, string[]][] {
  const out = new Map<string, string[]>();
  for (const table of parseIptablesSave(saved).values()) {
    for (const name of table.chains.keys()) out.set(name, []);
    for (const rule of table.rules) out.get(rule.chain)?.push(rule.spec);
  }
  return [...out].sort(([a], [b]) => a.localeCompare(b));
}

function cluster(endpointOf0: string, extra: number, noEndpoints: boolean): ProxyState {
  const ports = [sps(svc({ name: "svc0", clusterIP: "172.30.0.1" }), [ep(endpointOf0)])];
  for (let i = 1; i <= 20 + extra; i++) {
    ports.push(sps(svc({ name: `svc${i}`, clusterIP: `172.30.1.${i}` }), [ep(`10.1.0.${i}`)]));
  }
  const lonely = svc({ name: "lonely", clusterIP: "172.30.2.1" });
  ports.push(sps(lonely, noEndpoints ? [] : [ep("10.2.0.1")]));
  return state(ports);
}

Deno.test("a partial sync writes a top-level chain or the filter table only when it changed, and the node ends as a full sync leaves it", async () => {
  const fake = createFakeIptables();
  const proxier = createIptablesProxier({ family: "IPv4", flavour: "legacy", runner: fake.run });
  const written = () => {
    const restores = fake.calls.filter((c) => c.cmd.endsWith("-restore"));
    return (restores.at(-1)!.stdin ?? "").split("\n");
  };
  const sameAsFullSync = async (s: ProxyState) => {
    const fresh = createFakeIptables();
    await createIptablesProxier({ family: "IPv4", flavour: "legacy", runner: fresh.run }).sync(s);
    for (const table of ["nat", "filter"]) {
      assert.deepEqual(
        chains(fake.save("legacy", "IPv4", table)),
        chains(fresh.save("legacy", "IPv4", table)),
        table,
      );
    }
  };
  await proxier.sync(cluster("10.0.0.1", 0, false));

  // An endpoint moves: only svc0's own chains.
  const moved = { ...cluster("10.0.0.2", 0, false), changed: new Set([key("ns1", "svc0")]) };
  assert.equal((await proxier.sync(moved)).full, false);
  assert.equal(
    written().some((l) => /^(:|-A )KUBE-(SERVICES|NODEPORTS|POSTROUTING)\b/.test(l)),
    false,
  );
  assert.equal(written().includes("*filter"), false);
  await sameAsFullSync(moved);

  // A service is added: KUBE-SERVICES is written whole, KUBE-POSTROUTING still left alone.
  const added = { ...cluster("10.0.0.2", 1, false), changed: new Set([key("ns1", "svc21")]) };
  assert.equal((await proxier.sync(added)).full, false);
  assert.equal(written().filter((l) => l.startsWith("-A KUBE-SERVICES ")).length, 24);
  assert.equal(written().includes(":KUBE-SERVICES - [0:0]"), true);
  assert.equal(written().some((l) => l.includes("KUBE-POSTROUTING")), false);
  await sameAsFullSync(added);

  // A service loses its endpoints: its REJECT rule changes the filter table, which is written.
  const lonely = { ...cluster("10.0.0.2", 1, true), changed: new Set([key("ns1", "lonely")]) };
  assert.equal((await proxier.sync(lonely)).full, false);
  assert.equal(written().includes("*filter"), true);
  assert.ok(written().some((l) => l.includes("has no endpoints") && l.includes("REJECT")));
  await sameAsFullSync(lonely);

  // And back: nothing top-level left over from the removed rules.
  const back = { ...cluster("10.0.0.1", 0, false), changed: new Set([key("ns1", "svc0")]) };
  await proxier.sync(back);
  await sameAsFullSync(back);
});
