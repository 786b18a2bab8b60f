import assert from "node:assert/strict";
import {
  isServiceChainName,
  serviceExternalChain,
  serviceFirewallChain,
  servicePortEndpointChain,
  servicePortPolicyClusterChain,
  servicePortPolicyLocalChain,
} from "../../../lib/backends/iptables/chain_names.ts";

Deno.test("servicePortPolicyClusterChain() matches upstream's known hash", () => {
  assert.equal(servicePortPolicyClusterChain("ns1/svc1:p80", "tcp"), "KUBE-SVC-XPGD46QRK7WJZT7O");
  assert.equal(servicePortPolicyClusterChain("ns1/svc1:p80", "TCP"), "KUBE-SVC-XPGD46QRK7WJZT7O");
});

Deno.test("servicePortEndpointChain() matches upstream's known hash", () => {
  assert.equal(
    servicePortEndpointChain("ns1/svc1:p80", "tcp", "10.180.0.1:80"),
    "KUBE-SEP-SXIVWICOYRO3J4NJ",
  );
});

Deno.test("SVL, EXT and FW chains share the SVC hash", () => {
  assert.equal(servicePortPolicyLocalChain("ns1/svc1:p80", "tcp"), "KUBE-SVL-XPGD46QRK7WJZT7O");
  assert.equal(serviceExternalChain("ns1/svc1:p80", "tcp"), "KUBE-EXT-XPGD46QRK7WJZT7O");
  assert.equal(serviceFirewallChain("ns1/svc1:p80", "tcp"), "KUBE-FW-XPGD46QRK7WJZT7O");
});

Deno.test("isServiceChainName() accepts per-service chains only", () => {
  for (const c of ["KUBE-SVC-X", "KUBE-SVL-X", "KUBE-EXT-X", "KUBE-FW-X", "KUBE-SEP-X"]) {
    assert.ok(isServiceChainName(c), c);
  }
  for (const c of ["KUBE-SERVICES", "KUBE-NODEPORTS", "KUBE-MARK-MASQ", "MY-CHAIN"]) {
    assert.ok(!isServiceChainName(c), c);
  }
});
