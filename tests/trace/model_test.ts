/**
 * The reference model, one decision kind and reason at a time.
 * IP plan: pods 10.0.0.0/8, service IPs 172.30.0.0/16, node 192.168.0.2, external 203.0.113.2.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { modelDecision } from "../../lib/trace/model.ts";
import type { ModelOptions } from "../../lib/trace/model_options.ts";
import type { TracePacket, TraceSource } from "../../lib/trace/decision.ts";
import { ep, NODE_IP, sps, state, svc } from "../backends/iptables/state_fixtures.ts";
import { buildState } from "../support/trace_states.ts";

const base: ModelOptions = {
  mode: "iptables",
  family: "IPv4",
  masqueradeAll: false,
  podTraffic: { cidr: "10.0.0.0/8" },
  nodePortIPs: null,
  localhostNodePorts: true,
  localAddresses: [NODE_IP, "127.0.0.1"],
  nodeIPs: [NODE_IP],
};
const FROM: Record<TraceSource, string> = {
  pod: "10.0.9.9",
  node: NODE_IP,
  external: "203.0.113.2",
};

function packet(source: TraceSource, to: string, port: number, o: Partial<TracePacket> = {}) {
  return { family: "IPv4", from: FROM[source], protocol: "tcp", to, port, source, ...o } as const;
}

const two = [ep("10.1.0.1", 8080, { isLocal: true }), ep("10.2.0.1", 8080)];
const webOptions = {
  clusterIP: "172.30.0.10",
  nodePort: 30080,
  externalIPs: ["198.51.100.1"],
  loadBalancerIPs: ["203.0.114.1"],
};
const web = svc(webOptions);

Deno.test("modelDecision() forwards a pod's ClusterIP packet to every endpoint in equal shares", () => {
  const d = modelDecision(state([sps(web, two)]), packet("pod", "172.30.0.10", 80), base);
  assertEquals(d, {
    kind: "forward",
    servicePort: "ns1/svc1:p80",
    endpoints: [
      { address: "10.1.0.1:8080", probability: 0.5 },
      { address: "10.2.0.1:8080", probability: 0.5 },
    ],
    masquerade: false,
    affinitySeconds: 0,
  });
});

Deno.test("modelDecision() masquerades ClusterIP traffic from outside the cluster CIDR", () => {
  const s = state([sps(web, two)]);
  const fromNode = modelDecision(s, packet("node", "172.30.0.10", 80), base);
  assertEquals(fromNode.kind === "forward" && fromNode.masquerade, true);
  const noDetector = modelDecision(s, packet("node", "172.30.0.10", 80), {
    ...base,
    podTraffic: null,
  });
  assertEquals(noDetector.kind === "forward" && noDetector.masquerade, false);
  const all = modelDecision(s, packet("pod", "172.30.0.10", 80), { ...base, masqueradeAll: true });
  assertEquals(all.kind === "forward" && all.masquerade, true);
});

Deno.test("modelDecision() reports the affinity timeout", () => {
  const s = state([sps(svc({ clusterIP: "172.30.0.10", stickyMaxAgeSeconds: 600 }), two)]);
  const d = modelDecision(s, packet("pod", "172.30.0.10", 80), base);
  assertEquals(d.kind === "forward" && d.affinitySeconds, 600);
});

Deno.test("modelDecision() rejects a service port without endpoints on every address", () => {
  const s = state([sps(web, [])]);
  for (const [to, port] of [["172.30.0.10", 80], ["198.51.100.1", 80], [NODE_IP, 30080]] as const) {
    assertEquals(modelDecision(s, packet("external", to, port), base), {
      kind: "reject",
      servicePort: "ns1/svc1:p80",
      reason: "no-endpoints",
    });
  }
});

Deno.test("modelDecision() passes what no service uses, and rejects unused ClusterIP ports in nftables", () => {
  const s = state([sps(web, two)]);
  assertEquals(modelDecision(s, packet("pod", "172.30.0.10", 81), base), { kind: "pass" });
  assertEquals(modelDecision(s, packet("pod", "172.30.0.99", 80), base), { kind: "pass" });
  assertEquals(
    modelDecision(s, packet("pod", "172.30.0.10", 81), { ...base, mode: "nftables" }),
    { kind: "reject", servicePort: "", reason: "unused-port" },
  );
  assertEquals(
    modelDecision(s, packet("pod", "198.51.100.1", 81), { ...base, mode: "ipvs" }),
    { kind: "reject", servicePort: "", reason: "unused-port" },
  );
});

Deno.test("modelDecision() drops unallocated ServiceCIDR addresses in nftables mode only", () => {
  const s = { ...state([sps(web, two)]), serviceCIDRs: ["172.30.0.0/16"] };
  const nft = { ...base, mode: "nftables" as const };
  assertEquals(modelDecision(s, packet("pod", "172.30.9.9", 80), nft), {
    kind: "drop",
    servicePort: "",
    reason: "unallocated-cluster-ip",
  });
  assertEquals(modelDecision(s, packet("pod", "172.30.0.10", 81), nft).kind, "reject");
  assertEquals(modelDecision(s, packet("pod", "172.31.0.1", 80), nft), { kind: "pass" });
  assertEquals(modelDecision(s, packet("pod", "172.30.9.9", 80), base), { kind: "pass" });
});

Deno.test("modelDecision() sends external NodePort traffic of ETP Cluster everywhere, masqueraded", () => {
  const d = modelDecision(state([sps(web, two)]), packet("external", NODE_IP, 30080), base);
  assertEquals(d.kind === "forward" && [d.endpoints.length, d.masquerade], [2, true]);
});

Deno.test("modelDecision() follows ETP Local and its pod and node short-circuits", () => {
  const local = svc({ ...webOptions, externalPolicyLocal: true });
  const s = state([sps(local, two)]);
  const ext = modelDecision(s, packet("external", NODE_IP, 30080), base);
  assertEquals(ext.kind === "forward" && [ext.endpoints.map((e) => e.address), ext.masquerade], [
    ["10.1.0.1:8080"],
    false,
  ]);
  const pod = modelDecision(s, packet("pod", "198.51.100.1", 80), base);
  assertEquals(pod.kind === "forward" && [pod.endpoints.length, pod.masquerade], [2, false]);
  const node = modelDecision(s, packet("node", "198.51.100.1", 80), base);
  assertEquals(node.kind === "forward" && [node.endpoints.length, node.masquerade], [2, true]);
});

Deno.test("modelDecision() drops ETP Local traffic from outside when no endpoint is local", () => {
  const local = svc({ ...webOptions, externalPolicyLocal: true });
  const s = state([sps(local, [ep("10.2.0.1", 8080)])]);
  assertEquals(modelDecision(s, packet("external", "203.0.114.1", 80), base), {
    kind: "drop",
    servicePort: "ns1/svc1:p80",
    reason: "no-local-endpoints",
  });
  // IPVS falls back to the cluster set, without SNAT.
  const ipvs = modelDecision(s, packet("external", "203.0.114.1", 80), { ...base, mode: "ipvs" });
  assertEquals(ipvs.kind === "forward" && [ipvs.endpoints.length, ipvs.masquerade], [1, false]);
});

Deno.test("modelDecision() drops ITP Local ClusterIP traffic when no endpoint is local", () => {
  const s = state([sps(svc({ clusterIP: "172.30.0.10", internalPolicyLocal: true }), [
    ep("10.2.0.1", 8080),
  ])]);
  assertEquals(modelDecision(s, packet("pod", "172.30.0.10", 80), base), {
    kind: "drop",
    servicePort: "ns1/svc1:p80",
    reason: "no-local-endpoints",
  });
});

Deno.test("modelDecision() in IPVS mode falls back to the cluster set for ITP Local, else rejects", () => {
  const ipvs = { ...base, mode: "ipvs" as const };
  // Selected as the brain does: ITP Local alone leaves the cluster set empty, and the kernel's
  // empty virtual server cannot tell "no local endpoint" from "no endpoint".
  const internalOnly = buildState("IPv4", [{
    info: svc({ clusterIP: "172.30.0.10", internalPolicyLocal: true }),
    endpoints: [ep("10.2.0.1", 8080)],
  }]);
  assertEquals(modelDecision(internalOnly, packet("pod", "172.30.0.10", 80), ipvs), {
    kind: "reject",
    servicePort: "ns1/svc1:p80",
    reason: "no-endpoints",
  });
  const reachable = buildState("IPv4", [{
    info: svc({ ...webOptions, internalPolicyLocal: true }),
    endpoints: [ep("10.2.0.1", 8080)],
  }]);
  const d = modelDecision(reachable, packet("pod", "172.30.0.10", 80), ipvs);
  assertEquals(d.kind === "forward" && d.endpoints.map((e) => e.address), ["10.2.0.1:8080"]);
});

Deno.test("modelDecision() drops LB traffic from outside loadBalancerSourceRanges, not NodePorts", () => {
  const fw = svc({ ...webOptions, loadBalancerSourceRanges: ["198.18.0.0/15"] });
  const s = state([sps(fw, two)]);
  assertEquals(modelDecision(s, packet("external", "203.0.114.1", 80), base), {
    kind: "drop",
    servicePort: "ns1/svc1:p80",
    reason: "source-range",
  });
  const allowed = modelDecision(
    s,
    packet("external", "203.0.114.1", 80, { from: "198.19.0.5" }),
    base,
  );
  assertEquals(allowed.kind, "forward");
  assertEquals(modelDecision(s, packet("external", NODE_IP, 30080), base).kind, "forward");
});

Deno.test("modelDecision() serves NodePorts only on nodePortAddresses and localhost in iptables only", () => {
  const s = state([sps(web, two)]);
  const lo = packet("node", "127.0.0.1", 30080, { from: "127.0.0.1" });
  assertEquals(modelDecision(s, lo, base).kind, "forward");
  assertEquals(modelDecision(s, lo, { ...base, mode: "nftables", localhostNodePorts: false }), {
    kind: "pass",
  });
  const onlyOther = { ...base, nodePortIPs: ["192.168.0.3"] };
  assertEquals(modelDecision(s, packet("external", NODE_IP, 30080), onlyOther), { kind: "pass" });
});

Deno.test("modelDecision() in iptables mode does not refuse the node's own packets to a remote external IP", () => {
  const local = svc({ ...webOptions, externalPolicyLocal: true });
  const none = state([sps(svc(webOptions), [])]);
  assertEquals(modelDecision(none, packet("node", "198.51.100.1", 80), base), { kind: "pass" });
  assertEquals(
    modelDecision(none, packet("node", "198.51.100.1", 80), { ...base, mode: "nftables" }),
    {
      kind: "reject",
      servicePort: "ns1/svc1:p80",
      reason: "no-endpoints",
    },
  );
  // From the LB IP itself (not a local address): no short-circuit, and OUTPUT has no DROP...
  const remote = state([sps(local, [ep("10.2.0.1", 8080)])]);
  const fromLB = packet("node", "203.0.114.1", 80, { from: "203.0.114.1" });
  assertEquals(modelDecision(remote, fromLB, base), { kind: "pass" });
  // ...except the firewall of an LB IP with source ranges, hooked on OUTPUT too.
  const ranged = state([
    sps(
      svc({
        ...webOptions,
        externalPolicyLocal: true,
        loadBalancerSourceRanges: ["192.168.0.0/24"],
      }),
      [ep("10.2.0.1", 8080)],
    ),
  ]);
  assertEquals(modelDecision(ranged, fromLB, base), {
    kind: "drop",
    servicePort: "ns1/svc1:p80",
    reason: "no-local-endpoints",
  });
});
