/**
 * Builders for the Service / EndpointSlice / Node objects the e2e tests write as manifests.
 * IP plan: node 192.168.0.2 (named node1), pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import { flowSlice, local } from "./flow_objects.ts";

/** One port of a test Service. */
export interface TestPort {
  readonly name: string;
  readonly port: number;
  readonly targetPort: number;
  readonly protocol?: "TCP" | "UDP" | "SCTP";
}

/** A ClusterIP Service object. */
export function service(ns: string, name: string, clusterIP: string, ports: readonly TestPort[]) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace: ns, name },
    spec: {
      clusterIP,
      clusterIPs: [clusterIP],
      ports: ports.map((p) => ({
        name: p.name,
        port: p.port,
        targetPort: p.targetPort,
        protocol: p.protocol ?? "TCP",
      })),
    },
  };
}

/** An EndpointSlice `<svc>-slice` for `svc` with ready endpoints on node1. */
export function endpointSlice(
  ns: string,
  svc: string,
  ips: readonly string[],
  ports: readonly TestPort[],
) {
  return flowSlice(ns, svc, `${svc}-slice`, ips.map(local), ports);
}

/** The proxy's own Node object. */
export function node1() {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "node1", labels: { "kubernetes.io/hostname": "node1" } },
    status: { addresses: [{ type: "InternalIP", address: "192.168.0.2" }] },
  };
}

/** A kubectl-style List holding `items`. */
export function list(items: readonly unknown[]) {
  return { apiVersion: "v1", kind: "List", items };
}
