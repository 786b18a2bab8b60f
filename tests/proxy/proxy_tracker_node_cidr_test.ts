import assert from "node:assert/strict";
import { createProxyTracker } from "../../lib/proxy/mod.ts";
import { makeNode, makeService, NODE, nodeEvent } from "./fixtures.ts";

Deno.test("ProxyTracker forces a full sync when this node's podCIDRs change (detect-local NodeCIDR)", () => {
  const t = createProxyTracker({ nodeName: NODE });
  t.handleEvent({ kind: "Service", type: "ADDED", object: makeService("ns1", "svc1") });
  t.handleEvent(nodeEvent("ADDED", makeNode()));
  const first = t.snapshot("IPv4");
  assert.deepEqual(first.node.podCIDRs, []);
  assert.equal(t.snapshot("IPv4").forceFullSync, false);

  const withCIDRs = makeNode({}, undefined, {
    spec: { podCIDRs: ["10.0.1.0/24", "fd00:10:1::/64"] },
  });
  t.handleEvent(nodeEvent("MODIFIED", withCIDRs));
  const v4 = t.snapshot("IPv4");
  assert.equal(v4.forceFullSync, true);
  assert.deepEqual(v4.node.podCIDRs, ["10.0.1.0/24"]);
  // Nothing else changed: the services are reused, only the whole-ruleset rewrite is forced.
  assert.deepEqual([...v4.changed], []);
  assert.equal(t.snapshot("IPv4").forceFullSync, false);

  t.handleEvent(
    nodeEvent("MODIFIED", makeNode({}, undefined, { spec: { podCIDR: "10.0.2.0/24" } })),
  );
  const moved = t.snapshot("IPv4");
  assert.equal(moved.forceFullSync, true);
  assert.deepEqual(moved.node.podCIDRs, ["10.0.2.0/24"]);
});
