/**
 * Builders for the externally reachable Services (NodePort, LoadBalancer, externalIPs,
 * externalTrafficPolicy Local, loadBalancerSourceRanges, ClientIP affinity) and for
 * EndpointSlices of either family whose endpoints live on either node, as the packet-flow and
 * endpoint-selection tests write them.
 * IP plan: node 192.168.0.2 / fd00:192::2 (node1), node2 192.168.0.3, pods 10.0.0.0/8 and
 * fd00:10::/64, services 172.30.0.0/16 and fd00:30::/108, external client 203.0.113.2.
 */

/** One port of a flow-test Service; `nodePort` 0 or absent means none. */
export interface FlowPort {
  readonly name: string;
  readonly port: number;
  readonly targetPort: number;
  readonly protocol?: "TCP" | "UDP" | "SCTP";
  readonly nodePort?: number;
}

/** What a flow-test Service looks like beyond its cluster IP and ports. */
export interface FlowServiceSpec {
  readonly type?: "ClusterIP" | "NodePort" | "LoadBalancer";
  readonly externalTrafficPolicy?: "Cluster" | "Local";
  readonly externalIPs?: readonly string[];
  /** Written to status.loadBalancer.ingress (type LoadBalancer). */
  readonly loadBalancerIPs?: readonly string[];
  readonly loadBalancerSourceRanges?: readonly string[];
  /** ClientIP affinity with this timeout; absent means no affinity. */
  readonly affinitySeconds?: number;
}

/** A Service object with the given external exposure. */
export function flowService(
  ns: string,
  name: string,
  clusterIP: string,
  ports: readonly FlowPort[],
  spec: FlowServiceSpec = {},
) {
  const lbIPs = spec.loadBalancerIPs ?? [];
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: ns, name },
    spec: {
      type: spec.type ?? (lbIPs.length > 0 ? "LoadBalancer" : "ClusterIP"),
      clusterIP,
      clusterIPs: [clusterIP],
      ports: ports.map((p) => ({
        name: p.name,
        port: p.port,
        targetPort: p.targetPort,
        protocol: p.protocol ?? "TCP",
        ...(p.nodePort ? { nodePort: p.nodePort } : {}),
      })),
      ...(spec.externalTrafficPolicy ? { externalTrafficPolicy: spec.externalTrafficPolicy } : {}),
      ...(spec.externalIPs ? { externalIPs: [...spec.externalIPs] } : {}),
      ...(spec.loadBalancerSourceRanges
        ? { loadBalancerSourceRanges: [...spec.loadBalancerSourceRanges] }
        : {}),
      ...(spec.affinitySeconds !== undefined
        ? {
          sessionAffinity: "ClientIP",
          sessionAffinityConfig: { clientIP: { timeoutSeconds: spec.affinitySeconds } },
        }
        : {}),
    },
    status: { loadBalancer: { ingress: lbIPs.map((ip) => ({ ip })) } },
  };
}

/** A ready endpoint and the node it runs on ("node1" is the proxy's node). */
export interface FlowEndpoint {
  readonly ip: string;
  readonly nodeName: "node1" | "node2";
}

/** A local (node1) endpoint. */
export function local(ip: string): FlowEndpoint {
  return { ip, nodeName: "node1" };
}

/** A remote (node2) endpoint. */
export function remote(ip: string): FlowEndpoint {
  return { ip, nodeName: "node2" };
}

/** An EndpointSlice `slice` of service `svc` with ready endpoints on their nodes. */
export function flowSlice(
  ns: string,
  svc: string,
  slice: string,
  endpoints: readonly FlowEndpoint[],
  ports: readonly FlowPort[],
) {
  return selectionSlice(ns, svc, slice, "IPv4", endpoints, ports);
}

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
