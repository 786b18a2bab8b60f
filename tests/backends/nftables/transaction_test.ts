import assert from "node:assert/strict";
import { fullTransaction, partialTransaction } from "../../../lib/backends/nftables/transaction.ts";
import {
  newNftTableStore,
  renderNftables,
  updateNftTableStore,
} from "../../../lib/backends/nftables/render.ts";
import { resolveNftRenderConfig } from "../../../lib/backends/nftables/render_options.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import { FakeNft } from "../../support/fake_nft.ts";
import { ep, key, sps, state, svc, variedServicePorts } from "../iptables/state_fixtures.ts";
import { modelText } from "./model_helpers.ts";

const OPTS = { clusterCIDRs: ["10.0.0.0/8"] };

function applyFull(fake: FakeNft, s: ProxyState) {
  const r = renderNftables(s, OPTS);
  fake.apply(fullTransaction(r.model).script);
  return r.model;
}

Deno.test("fullTransaction() leaves exactly the rendered table, and recreates it when run again", () => {
  for (const family of ["IPv4", "IPv6"] as const) {
    const fake = new FakeNft();
    const s = state(variedServicePorts(40, family), { family });
    const model = applyFull(fake, s);
    assert.equal(modelText(fake.model(model.family, "kube-proxy")), modelText(model));
    applyFull(fake, s);
    assert.equal(modelText(fake.model(model.family, "kube-proxy")), modelText(model));
  }
});

Deno.test("partialTransaction() from one render to the next equals a fresh full sync", () => {
  for (const family of ["IPv4", "IPv6"] as const) {
    const fake = new FakeNft();
    let prev = applyFull(fake, state(variedServicePorts(40, family), { family }));
    for (const [n, gen] of [[40, 1], [25, 2], [60, 2], [0, 0], [30, 3]] as const) {
      const next =
        renderNftables(state(variedServicePorts(n, family, gen), { family }), OPTS).model;
      const tx = partialTransaction(prev, next);
      assert.ok(tx !== null);
      fake.apply(tx.script);
      assert.equal(
        modelText(fake.model(next.family, "kube-proxy")),
        modelText(next),
        `${n}/${gen}`,
      );
      prev = next;
    }
  }
});

Deno.test("partialTransaction() asks for a full sync when a set's declaration changes", () => {
  const a = renderNftables(state([sps(svc({ stickyMaxAgeSeconds: 60 }), [ep("10.0.0.1")])]), OPTS);
  const b = renderNftables(state([sps(svc({ stickyMaxAgeSeconds: 90 }), [ep("10.0.0.1")])]), OPTS);
  assert.equal(partialTransaction(a.model, b.model), null);
});

Deno.test("NftTableStore re-renders only changed service ports and touches nothing else", () => {
  const fake = new FakeNft();
  const ports = variedServicePorts(50);
  let s = state(ports);
  const config = resolveNftRenderConfig(s, OPTS);
  const store = newNftTableStore(config);
  store.suspendTracking();
  updateNftTableStore(store, s, config, true);
  fake.apply(fullTransaction(store.model()).script);
  store.markWritten();

  // Move one endpoint of one service, remove another service, add a new one.
  const moved = ports[3]!;
  const next = new Map(s.services);
  const movedKey = key(
    moved.info.name.namespace,
    moved.info.name.name,
    moved.info.name.port,
    moved.info.protocol,
  );
  next.set(movedKey, sps(moved.info, [ep("10.77.0.1", 8080), ...moved.allEndpoints.slice(1)]));
  const gone = ports[10]!.info.name;
  const goneKey = key(gone.namespace, gone.name, gone.port, gone.protocol);
  next.delete(goneKey);
  const added = sps(svc({ name: "new", clusterIP: "172.30.9.9" }), [ep("10.9.9.9")]);
  const addedKey = key("ns1", "new");
  next.set(addedKey, added);
  s = {
    ...s,
    services: next,
    changed: new Set([movedKey, goneKey, addedKey]),
    forceFullSync: false,
  };

  updateNftTableStore(store, s, config, false);
  const tx = store.takeTransaction();
  assert.ok(tx !== null);
  fake.apply(tx.script);
  const fresh = renderNftables(s, OPTS).model;
  assert.equal(modelText(fake.model("ip", "kube-proxy")), modelText(fresh));

  // Only elements of the three service ports (before or after) were touched.
  const theirs = new Set<string>();
  for (const one of [moved, next.get(movedKey)!, ports[10]!, added]) {
    for (const set of renderNftables(state([one]), OPTS).model.sets.values()) {
      for (const k of set.elements.keys()) theirs.add(`${set.name}\u0000${k}`);
    }
  }
  for (const id of fake.touched.elements) assert.ok(theirs.has(id), `touched ${id}`);
  assert.ok(tx.elementsAdded + tx.elementsDeleted < 20, JSON.stringify({ ...tx, script: "" }));
  // A second take with nothing changed writes nothing.
  updateNftTableStore(store, { ...s, changed: new Set() }, config, false);
  assert.equal(store.takeTransaction()!.script.trim(), "");
});

Deno.test("NftTableStore deletes a removed affinity service's own chains and sets", () => {
  const fake = new FakeNft();
  const sticky = sps(svc({ name: "st", stickyMaxAgeSeconds: 30, nodePort: 30111 }), [
    ep("10.0.0.1"),
    ep("10.0.0.2"),
  ]);
  let s = state([sticky]);
  const config = resolveNftRenderConfig(s, OPTS);
  const store = newNftTableStore(config);
  updateNftTableStore(store, s, config, true);
  fake.apply(fullTransaction(store.model()).script);
  store.markWritten();
  assert.equal(
    [...fake.model("ip", "kube-proxy")!.sets.keys()].filter((n) => n.startsWith("affinity-"))
      .length,
    2,
  );
  s = { ...s, services: new Map(), changed: new Set([key("ns1", "st")]) };
  updateNftTableStore(store, s, config, false);
  fake.apply(store.takeTransaction()!.script);
  const after = fake.model("ip", "kube-proxy")!;
  assert.equal([...after.sets.keys()].filter((n) => n.startsWith("affinity-")).length, 0);
  assert.equal([...after.chains.keys()].filter((n) => n.includes("/")).length, 0);
  assert.equal(modelText(after), modelText(renderNftables(s, OPTS).model));
});
