/**
 * The dual-stack cluster the IPv6 tests of every mode share: a dual-stack NodePort service
 * (IPv6 primary) on pod-a and pod-b, an IPv6 single-endpoint service for hairpin, an IPv6
 * service without endpoints, and an IPv6-only UDP service on `dnsPod`.
 * IP plan: node 192.168.0.2 / fd00:192::2 (node1), local pods 10.0.1.2 / 10.0.2.2 / 10.0.3.2
 * with IPv6 fd00:10::1:2 / fd00:10::2:2 / fd00:10::3:2, services 172.30.0.0/16 and
 * fd00:30::/108, external client 203.0.113.2 / fd00:203::2.
 */
import { list } from "./cluster_objects.ts";
import { type FlowPort, flowService, selectionSlice } from "./flow_objects.ts";
import { dualStack, zonedNode1 } from "./selection_objects.ts";

/** pod-a's addresses. */
export const A = { v4: "10.0.1.2", v6: "fd00:10::1:2" };
/** pod-b's addresses. */
export const B = { v4: "10.0.2.2", v6: "fd00:10::2:2" };
/** The port every pod's echo server listens on. */
export const TARGET = 8080;
const TCP: FlowPort = { name: "tcp", port: 80, targetPort: TARGET, nodePort: 30150 };
const UDP: FlowPort = {
  name: "udp",
  port: 80,
  targetPort: TARGET,
  protocol: "UDP",
  nodePort: 30150,
};
/** The same ports without a NodePort, for the ClusterIP-only services. */
const TCP_CIP: FlowPort = { ...TCP, nodePort: 0 };
const UDP_CIP: FlowPort = { ...UDP, nodePort: 0 };
const DNS: FlowPort = { name: "dns", port: 53, targetPort: TARGET, protocol: "UDP" };

/** One slice per family holding `pods` on node1. */
function slices(svc: string, pods: readonly (typeof A)[], ports: readonly FlowPort[]) {
  return (["IPv4", "IPv6"] as const).map((family) =>
    selectionSlice(
      "demo",
      svc,
      `${svc}-${family.toLowerCase()}`,
      family,
      pods.map((p) => ({ ip: family === "IPv4" ? p.v4 : p.v6, nodeName: "node1" as const })),
      ports,
    )
  );
}

/** The cluster; `dnsPod` backs the IPv6-only UDP service the conntrack check moves. */
export function dualStackCluster(dnsPod: typeof A) {
  return list([
    zonedNode1(""),
    // Dual-stack, IPv6 primary, reachable as a NodePort on both families.
    dualStack(flowService("demo", "dual", "fd00:30::50", [TCP, UDP], { type: "NodePort" }), [
      "fd00:30::50",
      "172.30.0.50",
    ]),
    ...slices("dual", [A, B], [TCP, UDP]),
    // Single endpoint, so pod-a calling it always hairpins.
    dualStack(flowService("demo", "self", "fd00:30::51", [TCP_CIP]), ["fd00:30::51"]),
    selectionSlice("demo", "self", "self-v6", "IPv6", [{ ip: A.v6, nodeName: "node1" }], [TCP_CIP]),
    // No endpoints at all.
    dualStack(flowService("demo", "empty", "fd00:30::52", [TCP_CIP, UDP_CIP]), ["fd00:30::52"]),
    selectionSlice("demo", "empty", "empty-v6", "IPv6", [], [TCP_CIP, UDP_CIP]),
    dualStack(flowService("demo", "dns", "fd00:30::53", [DNS]), ["fd00:30::53"]),
    selectionSlice("demo", "dns", "dns-v6", "IPv6", [{ ip: dnsPod.v6, nodeName: "node1" }], [DNS]),
  ]);
}
