import assert from "node:assert/strict";
import {
  IPSET_NAME_MAX,
  ipv6IpsetName,
  KUBE_IPSET_BASE_NAMES,
  KUBE_IPSET_NAMES,
} from "../../../lib/backends/ipvs/_ipset_names.ts";

Deno.test("ipv6IpsetName() turns KUBE- into KUBE-6- and cuts the name to 31 characters", () => {
  assert.equal(ipv6IpsetName("KUBE-CLUSTER-IP"), "KUBE-6-CLUSTER-IP");
  assert.equal(ipv6IpsetName("KUBE-LOAD-BALANCER-SOURCE-CIDR"), "KUBE-6-LOAD-BALANCER-SOURCE-CID");
  assert.equal(ipv6IpsetName("KUBE-NODE-PORT-LOCAL-SCTP-HASH"), "KUBE-6-NODE-PORT-LOCAL-SCTP-HAS");
  assert.equal(ipv6IpsetName("other"), "other");
});

Deno.test("KUBE_IPSET_NAMES holds every set of both families, all KUBE- and at most 31 characters", () => {
  assert.equal(KUBE_IPSET_BASE_NAMES.length, 17);
  assert.equal(KUBE_IPSET_NAMES.size, 34);
  for (const name of KUBE_IPSET_NAMES) {
    assert.ok(name.startsWith("KUBE-"), name);
    assert.ok(name.length <= IPSET_NAME_MAX, name);
  }
  for (
    const name of [
      "KUBE-LOOP-BACK",
      "KUBE-6-HEALTH-CHECK-NODE-PORT",
      "KUBE-NODE-PORT-TCP",
      "KUBE-6-IPVS-IPS",
    ]
  ) {
    assert.ok(KUBE_IPSET_NAMES.has(name), name);
  }
});
