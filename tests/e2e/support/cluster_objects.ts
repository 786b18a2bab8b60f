/**
 * ClusterIP shorthands (over flow_objects.ts) and the Node / List objects the e2e tests write as
 * manifests.
 * IP plan: node 192.168.0.2 (named node1), pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import { type FlowPort, flowService, flowSlice, local } from "./flow_objects.ts";

/** One port of a ClusterIP test Service. */
export type TestPort = Omit<FlowPort, "nodePort">;

/** A ClusterIP Service object. */
export function service(ns: string, name: string, clusterIP: string, ports: readonly TestPort[]) {
  return flowService(ns, name, clusterIP, ports);
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
