/**
 * The reference model in IPVS mode, where upstream's IPVS proxier parts from iptables mode:
 * source ranges checked whatever the endpoints, the node's own traffic checked only by
 * KUBE-IPVS-OUT-FILTER, the PR #97081 fallback, and the kernel's one answer for an empty
 * virtual server. IP plan: pods 10.0.0.0/8, service IPs 172.30.0.0/16, node 192.168.0.2,
 * external 203.0.113.2, LB IPs 203.0.114.0/24.
 */
import { deepStrictEqual as assertEquals } from "node:assert/strict";
import { modelDecision } from "../../lib/trace/model.ts";
import type { ModelOptions } from "../../lib/trace/model_options.ts";
import type { TracePacket, TraceSource } from "../../lib/trace/decision.ts";
import { ep, NODE_IP, svc } from "../backends/iptables/state_fixtures.ts";
import { buildState } from "../support/trace_states.ts";

const ipvs: ModelOptions = {
  mode: "ipvs",
  family: "IPv4",
  masqueradeAll: false,
  podTraffic: { cidr: "10.0.0.0/8" },
  nodePortIPs: [NODE_IP],
  localhostNodePorts: false,
  localAddresses: [NODE_IP, "127.0.0.1"],
  nodeIPs: [NODE_IP],
};
const FROM: Record<TraceSource, string> = {
  pod: "10.0.9.9",
  node: NODE_IP,
  external: "203.0.113.2",
};
const LB = "203.0.114.1";

function packet(source: TraceSource, to: string, port: number, o: Partial<TracePacket> = {}) {
  return { family: "IPv4", from: FROM[source], protocol: "tcp", to, port, source, ...o } as const;
}

function lbState(ranges: string[], endpoints: ReturnType<typeof ep>[], policy = {}) {
  return buildState("IPv4", [{
    info: svc({
      clusterIP: "172.30.0.10",
      nodePort: 30080,
      loadBalancerIPs: [LB],
      loadBalancerSourceRanges: ranges,
      ...policy,
    }),
    endpoints,
  }]);
}

const dropped = { kind: "drop", servicePort: "ns1/svc1:p80", reason: "source-range" };
const rejected = { kind: "reject", servicePort: "ns1/svc1:p80", reason: "no-endpoints" };

Deno.test("modelDecision() in IPVS mode drops sources outside the ranges even without endpoints", () => {
  const s = lbState(["203.0.113.0/24"], []);
  assertEquals(modelDecision(s, packet("pod", LB, 80), ipvs), dropped);
  // Inside the ranges the empty virtual server answers.
  assertEquals(modelDecision(s, packet("external", LB, 80), ipvs), rejected);
});

Deno.test("modelDecision() in IPVS mode checks the node's own traffic only when sent from the LB IP", () => {
  const s = lbState(["203.0.113.0/24"], [ep("10.2.0.1", 8080)]);
  const fromNodeIP = modelDecision(s, packet("node", LB, 80), ipvs);
  assertEquals(fromNodeIP.kind === "forward" && fromNodeIP.endpoints.length, 1);
  assertEquals(modelDecision(s, packet("node", LB, 80, { from: LB }), ipvs), dropped);
  // A range holding the node IP lets the LB IP in as a source.
  const withNode = lbState(["203.0.113.0/24", "192.168.0.0/24"], [ep("10.2.0.1", 8080)]);
  assertEquals(modelDecision(withNode, packet("node", LB, 80, { from: LB }), ipvs).kind, "forward");
  // Without a real server IPVS answers before filter OUTPUT sees the packet.
  const empty = lbState(["203.0.113.0/24"], []);
  assertEquals(modelDecision(empty, packet("node", LB, 80, { from: LB }), ipvs), rejected);
});

Deno.test("modelDecision() in IPVS mode sends ITP Local ClusterIP traffic to the cluster set of an ETP Cluster LB", () => {
  const s = lbState([], [ep("10.2.0.1", 8080)], { internalPolicyLocal: true });
  assertEquals(modelDecision(s, packet("pod", "172.30.0.10", 80), ipvs), {
    kind: "forward",
    servicePort: "ns1/svc1:p80",
    endpoints: [{ address: "10.2.0.1:8080", probability: 1 }],
    masquerade: false,
    affinitySeconds: 0,
  });
});

Deno.test("modelDecision() in IPVS mode says no-endpoints for an empty virtual server of a Local policy", () => {
  // ITP Local on a service not reachable from outside: the cluster set is empty too.
  const s = buildState("IPv4", [{
    info: svc({ clusterIP: "172.30.0.10", internalPolicyLocal: true }),
    endpoints: [ep("10.2.0.1", 8080)],
  }]);
  assertEquals(modelDecision(s, packet("pod", "172.30.0.10", 80), ipvs), rejected);
  // ETP Local keeps the cluster set (for pods' short-circuit), so its fallback is never empty.
  const etp = lbState([], [ep("10.2.0.1", 8080)], { externalPolicyLocal: true });
  const ext = modelDecision(etp, packet("external", LB, 80), ipvs);
  assertEquals(ext.kind === "forward" && [ext.endpoints.length, ext.masquerade], [1, false]);
});
