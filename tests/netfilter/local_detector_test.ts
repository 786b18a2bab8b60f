import assert from "node:assert/strict";
import { localTrafficDetector } from "../../lib/netfilter/mod.ts";
import { NO_OP_LOCAL_DETECTOR } from "../../lib/netfilter/_local_detector.ts";

Deno.test("localTrafficDetector() ClusterCIDR matches the first cluster CIDR of the family", () => {
  const inputs = { mode: "ClusterCIDR" as const, clusterCIDRs: ["fd00:10::/64", "10.0.0.0/8"] };
  assert.deepEqual(localTrafficDetector(inputs, "IPv4"), {
    ifLocal: ["-s", "10.0.0.0/8"],
    ifNotLocal: ["!", "-s", "10.0.0.0/8"],
  });
  assert.deepEqual(localTrafficDetector(inputs, "IPv6"), {
    ifLocal: ["-s", "fd00:10::/64"],
    ifNotLocal: ["!", "-s", "fd00:10::/64"],
  });
  assert.deepEqual(
    localTrafficDetector({ mode: "ClusterCIDR", clusterCIDRs: ["10.0.0.0/8"] }, "IPv6"),
    NO_OP_LOCAL_DETECTOR,
  );
  assert.throws(
    () => localTrafficDetector({ mode: "ClusterCIDR", clusterCIDRs: ["10.0.0.0/33"] }, "IPv4"),
    /Invalid cluster CIDR "10\.0\.0\.0\/33": expected a CIDR/,
  );
});

Deno.test("localTrafficDetector() NodeCIDR uses the node's podCIDR of the family, no-op without one", () => {
  const inputs = {
    mode: "NodeCIDR" as const,
    clusterCIDRs: ["10.0.0.0/8"],
    nodePodCIDRs: ["10.0.1.0/24", "fd00:10:1::/64"],
  };
  assert.deepEqual(localTrafficDetector(inputs, "IPv4"), {
    ifLocal: ["-s", "10.0.1.0/24"],
    ifNotLocal: ["!", "-s", "10.0.1.0/24"],
  });
  assert.deepEqual(localTrafficDetector(inputs, "IPv6").ifLocal, ["-s", "fd00:10:1::/64"]);
  // The cluster CIDR is not a fallback: upstream's detector stays a no-op.
  assert.deepEqual(
    localTrafficDetector({ ...inputs, nodePodCIDRs: [] }, "IPv4"),
    NO_OP_LOCAL_DETECTOR,
  );
});

Deno.test("localTrafficDetector() BridgeInterface and InterfaceNamePrefix match the input interface in both families", () => {
  for (const family of ["IPv4", "IPv6"] as const) {
    assert.deepEqual(
      localTrafficDetector({ mode: "BridgeInterface", bridgeInterface: "cbr0" }, family),
      { ifLocal: ["-i", "cbr0"], ifNotLocal: ["!", "-i", "cbr0"] },
    );
    assert.deepEqual(
      localTrafficDetector({ mode: "InterfaceNamePrefix", interfaceNamePrefix: "veth" }, family),
      { ifLocal: ["-i", "veth+"], ifNotLocal: ["!", "-i", "veth+"] },
    );
  }
});

Deno.test("localTrafficDetector() rejects interface names that are empty, too long or could inject", () => {
  const bridge = (name: string) =>
    localTrafficDetector({ mode: "BridgeInterface", bridgeInterface: name }, "IPv4");
  const prefix = (name: string) =>
    localTrafficDetector({ mode: "InterfaceNamePrefix", interfaceNamePrefix: name }, "IPv4");
  assert.throws(() => bridge(""), /Invalid bridge interface "": expected 1 to 15/);
  assert.throws(() => bridge("cbr0 -j ACCEPT"), /Invalid bridge interface "cbr0 -j ACCEPT"/);
  assert.throws(() => bridge("a".repeat(16)), /expected 1 to 15/);
  assert.deepEqual(bridge("a".repeat(15)).ifLocal, ["-i", "a".repeat(15)]);
  assert.throws(() => prefix("veth+"), /Invalid interface name prefix "veth\+"/);
  assert.throws(() => prefix("a".repeat(15)), /expected 1 to 14/);
});
