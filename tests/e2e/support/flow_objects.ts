/**
 * Builders for the externally reachable Services (NodePort, LoadBalancer, externalIPs,
 * externalTrafficPolicy Local, loadBalancerSourceRanges, ClientIP affinity) and for
 * EndpointSlices whose endpoints live on either node, as the packet-flow tests write them.
 * IP plan: node 192.168.0.2 (node1), node2 192.168.0.3, pods 10.0.0.0/8, services 172.30.0.0/16,
 * external client 203.0.113.2.
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
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      namespace: ns,
      name: slice,
      labels: { "kubernetes.io/service-name": svc },
    },
    addressType: "IPv4",
    ports: ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: p.protocol ?? "TCP" })),
    endpoints: endpoints.map((ep) => ({
      addresses: [ep.ip],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: ep.nodeName,
    })),
  };
}
