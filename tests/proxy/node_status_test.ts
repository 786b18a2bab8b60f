import assert from "node:assert/strict";
import { nodeInfoForFamily, validateNode } from "../../lib/proxy/node_status.ts";
import { makeNode, NODE } from "./fixtures.ts";

Deno.test("validateNode() orders InternalIP before ExternalIP and keeps health signals", () => {
  const res = validateNode(makeNode({ "topology.kubernetes.io/zone": "zone-a" }, [
    { type: "ExternalIP", address: "203.0.113.50" },
    { type: "Hostname", address: "node-a" },
    { type: "InternalIP", address: "192.168.0.2" },
    { type: "InternalIP", address: "FD00::2" },
  ], {
    deletionTimestamp: "2024-05-01T10:00:00Z",
    spec: {
      podCIDRs: ["10.0.1.0/24", "fd00:10::/64"],
      taints: [{ key: "ToBeDeletedByClusterAutoscaler", effect: "NoSchedule" }],
    },
  }));
  assert.ok(res.ok);
  assert.deepEqual(res.value, {
    name: NODE,
    labels: { "topology.kubernetes.io/zone": "zone-a" },
    addresses: ["192.168.0.2", "fd00::2", "203.0.113.50"],
    podCIDRs: ["10.0.1.0/24", "fd00:10::/64"],
    taints: [{ key: "ToBeDeletedByClusterAutoscaler", effect: "NoSchedule" }],
    deletionTimestamp: "2024-05-01T10:00:00Z",
  });
});

Deno.test("validateNode() rejects a bad address or podCIDR with a reason naming the field", () => {
  const bad = validateNode(makeNode({}, [{ type: "InternalIP", address: "192.168.0.256" }]));
  assert.ok(!bad.ok);
  assert.equal(
    bad.reason,
    'Node "node-a": status.addresses[0].address "192.168.0.256" is not a valid IP address',
  );
  const cidr = validateNode(makeNode({}, [], { spec: { podCIDR: "10.0.1.0/40" } }));
  assert.ok(!cidr.ok);
  assert.match(cidr.reason, /spec\.podCIDR "10\.0\.1\.0\/40" is not a valid CIDR/);
});

Deno.test("nodeInfoForFamily() uses the node's addresses, else the fallback of that family", () => {
  const res = validateNode(makeNode({}, [{ type: "InternalIP", address: "192.168.0.2" }]));
  assert.ok(res.ok);
  const fallback = ["192.168.0.9", "fd00::9"];
  assert.deepEqual(nodeInfoForFamily(NODE, res.value, "IPv4", fallback).ips, ["192.168.0.2"]);
  assert.deepEqual(nodeInfoForFamily(NODE, res.value, "IPv6", fallback).ips, ["fd00::9"]);
  assert.deepEqual(nodeInfoForFamily(NODE, undefined, "IPv4", fallback), {
    name: NODE,
    labels: {},
    ips: ["192.168.0.9"],
    podCIDRs: [],
  });
});
