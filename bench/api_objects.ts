/**
 * Cluster objects for the API benches, as a real API server would hold them: N ClusterIP
 * Services (one TCP port) in namespace "ns1", each with one EndpointSlice of 10 ready endpoints
 * on node1, plus the Node. IP plan: services 172.30.0.0/16, pods 10.0.0.0/8, node 192.168.0.2.
 * Services and EndpointSlices carry the managedFields entry kube-apiserver records for the client
 * that created them (as kube-apiserver v1.28.7 wrote it for the same objects).
 */
import type { TestApiServer } from "../tests/support/api_server/mod.ts";

/** Ready endpoints per EndpointSlice. */
export const ENDPOINTS_PER_SLICE = 10;

/** The managedFields of an object that `manager` created, setting `fields`. */
function createdBy(manager: string, apiVersion: string, fields: unknown): unknown[] {
  return [{
    manager,
    operation: "Update",
    apiVersion,
    time: "2026-01-01T00:00:00Z",
    fieldsType: "FieldsV1",
    fieldsV1: fields,
  }];
}

/** Service i: svc<i> with a ClusterIP counted up from 172.30.0.1. */
export function benchService(i: number): unknown {
  const ip = 1 + i;
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: {
      name: `svc${i}`,
      namespace: "ns1",
      labels: { app: `svc${i}` },
      managedFields: createdBy("kubectl-create", "v1", {
        "f:metadata": { "f:labels": { ".": {}, "f:app": {} } },
        "f:spec": {
          "f:clusterIP": {},
          "f:internalTrafficPolicy": {},
          "f:ports": {
            ".": {},
            'k:{"port":80,"protocol":"TCP"}': {
              ".": {},
              "f:name": {},
              "f:port": {},
              "f:protocol": {},
              "f:targetPort": {},
            },
          },
          "f:selector": {},
          "f:sessionAffinity": {},
          "f:type": {},
        },
      }),
    },
    spec: {
      type: "ClusterIP",
      clusterIP: `172.30.${ip >> 8}.${ip & 255}`,
      ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }],
      selector: { app: `svc${i}` },
    },
  };
}

/** The EndpointSlice of service i: 10 ready endpoints 10.<i>.x on node1. */
export function benchSlice(i: number): unknown {
  const endpoints = [];
  for (let e = 0; e < ENDPOINTS_PER_SLICE; e++) {
    const n = i * ENDPOINTS_PER_SLICE + e;
    endpoints.push({
      addresses: [`10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`],
      conditions: { ready: true, serving: true, terminating: false },
      nodeName: "node1",
      targetRef: { kind: "Pod", namespace: "ns1", name: `svc${i}-pod${e}` },
    });
  }
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: `svc${i}-abcde`,
      namespace: "ns1",
      labels: { "kubernetes.io/service-name": `svc${i}` },
      managedFields: createdBy("kube-controller-manager", "discovery.k8s.io/v1", {
        "f:addressType": {},
        "f:endpoints": {},
        "f:metadata": { "f:labels": { ".": {}, "f:kubernetes.io/service-name": {} } },
        "f:ports": {},
      }),
    },
    addressType: "IPv4",
    endpoints,
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
  };
}

/** The proxy's own Node. */
export function benchNode(): unknown {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name: "node1", labels: { "kubernetes.io/hostname": "node1" } },
    status: { addresses: [{ type: "InternalIP", address: "192.168.0.2" }] },
  };
}

/** Fills `server` with the node and `n` services, each with its slice. */
export function fillBenchCluster(server: TestApiServer, n: number): void {
  server.create(benchNode());
  for (let i = 0; i < n; i++) {
    server.create(benchService(i));
    server.create(benchSlice(i));
  }
}
