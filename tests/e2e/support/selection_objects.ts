/**
 * Builders for what endpoint selection reads: EndpointSlices of either family whose endpoints
 * carry conditions, a zone and topology hints; dual-stack and internal-policy variants of a
 * flow-test Service; and a Node with a zone label. Extends flow_objects.ts.
 * IP plan: node 192.168.0.2 / fd00:192::2 (node1), node2 192.168.0.3, pods 10.0.0.0/8 and
 * fd00:10::/64, services 172.30.0.0/16 and fd00:30::/108.
 */
import type { FlowPort, flowService } from "./flow_objects.ts";

/** An endpoint as selection sees it; conditions default to ready, serving, not terminating. */
export interface SelectionEndpoint {
  readonly ip: string;
  readonly nodeName: "node1" | "node2";
  readonly ready?: boolean;
  readonly serving?: boolean;
  readonly terminating?: boolean;
  /** The endpoint's own zone (spec.endpoints[].zone). */
  readonly zone?: string;
  /** hints.forNodes names. */
  readonly forNodes?: readonly string[];
  /** hints.forZones names. */
  readonly forZones?: readonly string[];
}

/** An EndpointSlice of `family` for `svc`, endpoints written with every field they set. */
export function selectionSlice(
  ns: string,
  svc: string,
  slice: string,
  family: "IPv4" | "IPv6",
  endpoints: readonly SelectionEndpoint[],
  ports: readonly FlowPort[],
) {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { namespace: ns, name: slice, labels: { "kubernetes.io/service-name": svc } },
    addressType: family,
    ports: ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: p.protocol ?? "TCP" })),
    endpoints: endpoints.map((ep) => ({
      addresses: [ep.ip],
      conditions: {
        ready: ep.ready ?? true,
        serving: ep.serving ?? true,
        terminating: ep.terminating ?? false,
      },
      nodeName: ep.nodeName,
      ...(ep.zone !== undefined ? { zone: ep.zone } : {}),
      ...(ep.forNodes || ep.forZones
        ? {
          hints: {
            ...(ep.forNodes ? { forNodes: ep.forNodes.map((name) => ({ name })) } : {}),
            ...(ep.forZones ? { forZones: ep.forZones.map((name) => ({ name })) } : {}),
          },
        }
        : {}),
    })),
  };
}

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
