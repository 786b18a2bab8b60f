/**
 * Builders for what endpoint selection reads beyond flow_objects.ts (whose selectionSlice writes
 * endpoint conditions, zones and topology hints): dual-stack and internal-policy variants of a
 * flow-test Service, and a Node with a zone label.
 * IP plan: node 192.168.0.2 / fd00:192::2 (node1), node2 192.168.0.3, pods 10.0.0.0/8 and
 * fd00:10::/64, services 172.30.0.0/16 and fd00:30::/108.
 */
import type { flowService } from "./flow_objects.ts";

type Service = ReturnType<typeof flowService>;

/** `svc` with one cluster IP per family (primary first), as a RequireDualStack Service. */
export function dualStack(svc: Service, clusterIPs: readonly string[]) {
  const families = clusterIPs.map((ip) => ip.includes(":") ? "IPv6" : "IPv4");
  return {
    ...svc,
    spec: {
      ...svc.spec,
      clusterIP: clusterIPs[0],
      clusterIPs: [...clusterIPs],
      ipFamilies: families,
      ipFamilyPolicy: clusterIPs.length > 1 ? "RequireDualStack" : "SingleStack",
    },
  };
}

/** `svc` with internalTrafficPolicy Local: cluster IP traffic stays on this node. */
export function internalLocal(svc: Service) {
  return { ...svc, spec: { ...svc.spec, internalTrafficPolicy: "Local" } };
}

/** The proxy's Node "node1" (192.168.0.2, fd00:192::2), in `zone` unless it is empty. */
export function zonedNode1(zone: string) {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: {
      name: "node1",
      labels: {
        "kubernetes.io/hostname": "node1",
        ...(zone !== "" ? { "topology.kubernetes.io/zone": zone } : {}),
      },
    },
    status: {
      addresses: [
        { type: "InternalIP", address: "192.168.0.2" },
        { type: "InternalIP", address: "fd00:192::2" },
      ],
    },
  };
}
