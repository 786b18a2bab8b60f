import assert from "node:assert/strict";
import {
  categorizeEndpoints,
  type Endpoint,
  type ServicePort,
  usesClusterEndpoints,
  usesLocalEndpoints,
} from "../../lib/proxy/mod.ts";
import { makeEndpoint as ep, makeServicePort as svc, NODE } from "./fixtures.ts";

interface Case {
  name: string;
  nodeLabels?: Record<string, string>;
  serviceInfo: ServicePort;
  endpoints: Endpoint[];
  /** null: the service never uses this kind of endpoint (upstream returns nil). */
  clusterEndpoints: string[] | null;
  localEndpoints: string[] | null;
  /** Defaults to whichever of the two sets is used, when only one is. */
  allEndpoints?: string[];
  /** hasAnyEndpoints is true although allEndpoints is empty. */
  onlyRemoteEndpoints?: boolean;
}

const zoneA = { "topology.kubernetes.io/zone": "zone-a" };
const local = { isLocal: true };
const st = { ready: false, serving: true, terminating: true };

// Mirrors upstream pkg/proxy/topology_test.go (v1.34, where hints need no annotation).
const cases: Case[] = [{
  name: "zone hints pick this zone's endpoints",
  nodeLabels: zoneA,
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"] }),
    ep("10.1.2.4", { zoneHints: ["zone-b"] }),
    ep("10.1.2.5", { zoneHints: ["zone-c"] }),
    ep("10.1.2.6", { zoneHints: ["zone-a"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80", "10.1.2.6:80"],
  localEndpoints: null,
}, {
  name: "externalTrafficPolicy: Local, topology ignored for Local endpoints",
  nodeLabels: zoneA,
  serviceInfo: svc({ externalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"], ...local }),
    ep("10.1.2.4", { zoneHints: ["zone-b"], ...local }),
    ep("10.1.2.5", { zoneHints: ["zone-c"] }),
    ep("10.1.2.6", { zoneHints: ["zone-a"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80", "10.1.2.6:80"],
  localEndpoints: ["10.1.2.3:80", "10.1.2.4:80"],
  allEndpoints: ["10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80"],
}, {
  name: "internalTrafficPolicy: Local, topology ignored for Local endpoints",
  nodeLabels: zoneA,
  serviceInfo: svc({ internalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"], ...local }),
    ep("10.1.2.4", { zoneHints: ["zone-b"], ...local }),
    ep("10.1.2.5", { zoneHints: ["zone-c"] }),
    ep("10.1.2.6", { zoneHints: ["zone-a"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80", "10.1.2.6:80"],
  localEndpoints: ["10.1.2.3:80", "10.1.2.4:80"],
  allEndpoints: ["10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80"],
}, {
  name: "empty node labels",
  nodeLabels: {},
  serviceInfo: svc(),
  endpoints: [ep("10.1.2.3", { zoneHints: ["zone-a"] })],
  clusterEndpoints: ["10.1.2.3:80"],
  localEndpoints: null,
}, {
  name: "empty zone label",
  nodeLabels: { "topology.kubernetes.io/zone": "" },
  serviceInfo: svc(),
  endpoints: [ep("10.1.2.3", { zoneHints: ["zone-a"] })],
  clusterEndpoints: ["10.1.2.3:80"],
  localEndpoints: null,
}, {
  name: "node in different zone, no endpoint filtering",
  nodeLabels: { "topology.kubernetes.io/zone": "zone-b" },
  serviceInfo: svc(),
  endpoints: [ep("10.1.2.3", { zoneHints: ["zone-a"] })],
  clusterEndpoints: ["10.1.2.3:80"],
  localEndpoints: null,
}, {
  name: "unready endpoint",
  nodeLabels: zoneA,
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"] }),
    ep("10.1.2.4", { zoneHints: ["zone-b"] }),
    ep("10.1.2.5", { zoneHints: ["zone-c"] }),
    ep("10.1.2.6", { zoneHints: ["zone-a"], ready: false }),
  ],
  clusterEndpoints: ["10.1.2.3:80"],
  localEndpoints: null,
}, {
  name: "only unready endpoints in same zone (should not filter)",
  nodeLabels: zoneA,
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"], ready: false }),
    ep("10.1.2.4", { zoneHints: ["zone-b"] }),
    ep("10.1.2.5", { zoneHints: ["zone-c"] }),
    ep("10.1.2.6", { zoneHints: ["zone-a"], ready: false }),
  ],
  clusterEndpoints: ["10.1.2.4:80", "10.1.2.5:80"],
  localEndpoints: null,
}, {
  name: "missing hints on one endpoint, no filtering applied",
  nodeLabels: zoneA,
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"] }),
    ep("10.1.2.4", { zoneHints: ["zone-b"] }),
    ep("10.1.2.5"),
    ep("10.1.2.6", { zoneHints: ["zone-a"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80", "10.1.2.4:80", "10.1.2.5:80", "10.1.2.6:80"],
  localEndpoints: null,
}, {
  name: "multiple hints per endpoint, filtering includes any endpoint with zone included",
  nodeLabels: { "topology.kubernetes.io/zone": "zone-c" },
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a", "zone-b", "zone-c"] }),
    ep("10.1.2.4", { zoneHints: ["zone-b", "zone-c"] }),
    ep("10.1.2.5", { zoneHints: ["zone-b", "zone-d"] }),
    ep("10.1.2.6", { zoneHints: ["zone-c"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80", "10.1.2.4:80", "10.1.2.6:80"],
  localEndpoints: null,
}, {
  name: "node hints win over zone hints when every endpoint has them",
  nodeLabels: zoneA,
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"], nodeHints: [NODE] }),
    ep("10.1.2.4", { zoneHints: ["zone-a"], nodeHints: ["node-b"] }),
    ep("10.1.2.5", { zoneHints: ["zone-b"], nodeHints: ["node-c"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80"],
  localEndpoints: null,
}, {
  name: "node hints not naming this node fall back to zone hints",
  nodeLabels: zoneA,
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"], nodeHints: ["node-b"] }),
    ep("10.1.2.4", { zoneHints: ["zone-a"], nodeHints: ["node-c"] }),
    ep("10.1.2.5", { zoneHints: ["zone-b"], nodeHints: ["node-d"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80", "10.1.2.4:80"],
  localEndpoints: null,
}, {
  name: "node hints missing on one endpoint fall back to zone hints",
  nodeLabels: zoneA,
  serviceInfo: svc(),
  endpoints: [
    ep("10.1.2.3", { zoneHints: ["zone-a"], nodeHints: [NODE] }),
    ep("10.1.2.4", { zoneHints: ["zone-a"] }),
    ep("10.1.2.5", { zoneHints: ["zone-b"], nodeHints: ["node-c"] }),
  ],
  clusterEndpoints: ["10.1.2.3:80", "10.1.2.4:80"],
  localEndpoints: null,
}, {
  name: "conflicting topology and localness require merging allEndpoints",
  nodeLabels: zoneA,
  serviceInfo: svc({ externalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [
    ep("10.0.0.0", { zoneHints: ["zone-a"], ...local }),
    ep("10.0.0.1", { zoneHints: ["zone-b"], ...local }),
    ep("10.0.0.2", { zoneHints: ["zone-a"] }),
    ep("10.0.0.3", { zoneHints: ["zone-b"] }),
  ],
  clusterEndpoints: ["10.0.0.0:80", "10.0.0.2:80"],
  localEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  allEndpoints: ["10.0.0.0:80", "10.0.0.1:80", "10.0.0.2:80"],
}, {
  name: "internalTrafficPolicy: Local, with empty endpoints",
  serviceInfo: svc({ internalPolicyLocal: true }),
  endpoints: [],
  clusterEndpoints: null,
  localEndpoints: [],
}, {
  name: "internalTrafficPolicy: Local, but all endpoints are remote",
  serviceInfo: svc({ internalPolicyLocal: true }),
  endpoints: [ep("10.0.0.0"), ep("10.0.0.1")],
  clusterEndpoints: null,
  localEndpoints: [],
  onlyRemoteEndpoints: true,
}, {
  name: "internalTrafficPolicy: Local, all endpoints are local",
  serviceInfo: svc({ internalPolicyLocal: true }),
  endpoints: [ep("10.0.0.0", local), ep("10.0.0.1", local)],
  clusterEndpoints: null,
  localEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
}, {
  name: "internalTrafficPolicy: Local, some endpoints are local",
  serviceInfo: svc({ internalPolicyLocal: true }),
  endpoints: [ep("10.0.0.0", local), ep("10.0.0.1")],
  clusterEndpoints: null,
  localEndpoints: ["10.0.0.0:80"],
}, {
  name: "Cluster traffic policy, endpoints not Ready",
  serviceInfo: svc(),
  endpoints: [ep("10.0.0.0", { ready: false }), ep("10.0.0.1", { ready: false })],
  clusterEndpoints: [],
  localEndpoints: null,
}, {
  name: "Cluster traffic policy, some endpoints are Ready",
  serviceInfo: svc(),
  endpoints: [ep("10.0.0.0", { ready: false }), ep("10.0.0.1")],
  clusterEndpoints: ["10.0.0.1:80"],
  localEndpoints: null,
}, {
  name: "Cluster traffic policy, all endpoints are terminating",
  serviceInfo: svc(),
  endpoints: [ep("10.0.0.0", { ...st, ...local }), ep("10.0.0.1", st)],
  clusterEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  localEndpoints: null,
}, {
  name: "iTP: Local, eTP: Cluster, some endpoints local",
  serviceInfo: svc({ internalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [ep("10.0.0.0", local), ep("10.0.0.1")],
  clusterEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  localEndpoints: ["10.0.0.0:80"],
  allEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
}, {
  name: "iTP: Cluster, eTP: Local, some endpoints local",
  serviceInfo: svc({ externalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [ep("10.0.0.0", local), ep("10.0.0.1")],
  clusterEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  localEndpoints: ["10.0.0.0:80"],
  allEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
}, {
  name: "iTP: Local, eTP: Local, all endpoints remote",
  serviceInfo: svc({ internalPolicyLocal: true, externalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [ep("10.0.0.0"), ep("10.0.0.1")],
  clusterEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  localEndpoints: [],
  allEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
}, {
  name: "iTP: Local, eTP: Local, all endpoints remote and terminating",
  serviceInfo: svc({ internalPolicyLocal: true, externalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [ep("10.0.0.0", st), ep("10.0.0.1", st)],
  clusterEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  localEndpoints: [],
  allEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  onlyRemoteEndpoints: true,
}, {
  name: "iTP: Cluster, eTP: Local, with terminating endpoints (fallback applies per set)",
  serviceInfo: svc({ externalPolicyLocal: true, nodePort: 30080 }),
  endpoints: [
    ep("10.0.0.0"),
    ep("10.0.0.1", { ready: false, serving: false, ...local }),
    ep("10.0.0.2", { ...st, ...local }),
    ep("10.0.0.3", st),
  ],
  clusterEndpoints: ["10.0.0.0:80"],
  localEndpoints: ["10.0.0.2:80"],
  allEndpoints: ["10.0.0.0:80", "10.0.0.2:80"],
}, {
  name: "externalTrafficPolicy ignored if not externally accessible",
  serviceInfo: svc({ externalPolicyLocal: true }),
  endpoints: [ep("10.0.0.0"), ep("10.0.0.1", local)],
  clusterEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
  localEndpoints: null,
  allEndpoints: ["10.0.0.0:80", "10.0.0.1:80"],
}, {
  name: "no cluster endpoints for iTP:Local internal-only service",
  serviceInfo: svc({ internalPolicyLocal: true }),
  endpoints: [ep("10.0.0.0"), ep("10.0.0.1", local)],
  clusterEndpoints: null,
  localEndpoints: ["10.0.0.1:80"],
  allEndpoints: ["10.0.0.1:80"],
}];

const addrs = (eps: readonly Endpoint[]) => eps.map((e) => e.address).sort();

for (const tc of cases) {
  Deno.test(`categorizeEndpoints() ${tc.name}`, () => {
    const got = categorizeEndpoints(tc.endpoints, tc.serviceInfo, NODE, tc.nodeLabels ?? {});
    assert.equal(
      usesClusterEndpoints(tc.serviceInfo),
      tc.clusterEndpoints !== null,
      "cluster set use",
    );
    assert.equal(usesLocalEndpoints(tc.serviceInfo), tc.localEndpoints !== null, "local set use");
    assert.deepEqual(addrs(got.clusterEndpoints), tc.clusterEndpoints ?? []);
    assert.deepEqual(addrs(got.localEndpoints), tc.localEndpoints ?? []);
    const expectedAll = tc.allEndpoints ??
      (tc.clusterEndpoints !== null && tc.localEndpoints === null
        ? tc.clusterEndpoints
        : tc.localEndpoints!);
    assert.deepEqual(addrs(got.allReachableEndpoints), expectedAll);
    assert.equal(got.hasAnyEndpoints, expectedAll.length > 0 || tc.onlyRemoteEndpoints === true);
  });
}

Deno.test("categorizeEndpoints() keeps the input order in allReachableEndpoints when merging", () => {
  const eps = [
    ep("10.0.0.1", { zoneHints: ["zone-b"], ...local }),
    ep("10.0.0.2", { zoneHints: ["zone-a"] }),
  ];
  const got = categorizeEndpoints(
    eps,
    svc({ externalPolicyLocal: true, nodePort: 30080 }),
    NODE,
    zoneA,
  );
  assert.deepEqual(got.allReachableEndpoints, eps);
});
