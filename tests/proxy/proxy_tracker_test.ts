import assert from "node:assert/strict";
import { createProxyTracker, type ProxyTracker } from "../../lib/proxy/mod.ts";
import type { ObjectKind } from "../../lib/source/mod.ts";
import {
  makeNode,
  makeService,
  makeSlice,
  NODE,
  nodeEvent,
  sliceEvent,
  svcEvent,
} from "./fixtures.ts";

const KEY = "ns1/svc1:p80/TCP";

function tracker(invalid: [ObjectKind, string, string][] = [], startTimeMs?: number): ProxyTracker {
  return createProxyTracker({
    nodeName: NODE,
    fallbackNodeIPs: ["192.168.0.2", "fd00::2"],
    onInvalid: (kind, key, reason) => invalid.push([kind, key, reason]),
    ...(startTimeMs === undefined ? {} : { startTimeMs }),
  });
}

Deno.test("ProxyTracker snapshot() joins services with their endpoints", () => {
  const t = tracker();
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1")));
  t.handleEvent(
    sliceEvent("ADDED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1", nodeName: NODE }])),
  );
  const s = t.snapshot("IPv4");
  assert.equal(s.family, "IPv4");
  assert.equal(s.forceFullSync, true);
  assert.deepEqual([...s.changed], [KEY]);
  assert.equal(s.totalEndpoints, 1);
  assert.deepEqual(s.node, { name: NODE, labels: {}, ips: ["192.168.0.2"], podCIDRs: [] });
  const st = s.services.get(KEY)!;
  assert.equal(st.info.clusterIP, "172.30.0.1");
  assert.deepEqual(st.allEndpoints.map((e) => [e.address, e.isLocal]), [["10.0.0.1:8080", true]]);
  assert.deepEqual(st.clusterEndpoints, st.allEndpoints);
  assert.equal(st.hasAnyEndpoints, true);
});

Deno.test("ProxyTracker reports only changed keys and reuses unchanged states", () => {
  const t = tracker();
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1")));
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc2", { clusterIP: "172.30.0.2" })));
  const first = t.snapshot("IPv4");
  assert.deepEqual([...first.changed].sort(), [KEY, "ns1/svc2:p80/TCP"]);

  t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1" }])));
  const second = t.snapshot("IPv4");
  assert.equal(second.forceFullSync, false);
  assert.deepEqual([...second.changed], [KEY]);
  assert.equal(second.services.get("ns1/svc2:p80/TCP"), first.services.get("ns1/svc2:p80/TCP"));

  // A port rename removes one key and adds another.
  t.handleEvent(
    svcEvent(
      "MODIFIED",
      makeService("ns1", "svc2", { clusterIP: "172.30.0.2", ports: [{ name: "web", port: 80 }] }),
    ),
  );
  const third = t.snapshot("IPv4");
  assert.deepEqual([...third.changed].sort(), ["ns1/svc2:p80/TCP", "ns1/svc2:web/TCP"]);
  assert.ok(third.services.has("ns1/svc2:web/TCP") && !third.services.has("ns1/svc2:p80/TCP"));

  t.handleEvent(svcEvent("DELETED", makeService("ns1", "svc1")));
  const fourth = t.snapshot("IPv4");
  assert.deepEqual([...fourth.changed], [KEY]);
  assert.equal(fourth.services.has(KEY), false);
  assert.equal(fourth.totalEndpoints, 0);

  assert.deepEqual([...t.snapshot("IPv4").changed], []);
  // The earlier snapshot is untouched by later ones.
  assert.ok(second.services.has(KEY));
});

Deno.test("ProxyTracker slice updates and deletes change the endpoints", () => {
  const t = tracker();
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1")));
  t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1" }])));
  t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", "svc1-b", "svc1", [{ ip: "10.0.0.2" }])));
  assert.equal(t.snapshot("IPv4").services.get(KEY)!.allEndpoints.length, 2);
  t.handleEvent(
    sliceEvent("MODIFIED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1", ready: false }])),
  );
  const s = t.snapshot("IPv4");
  assert.deepEqual([...s.changed], [KEY]);
  assert.deepEqual(s.services.get(KEY)!.clusterEndpoints.map((e) => e.ip), ["10.0.0.2"]);
  t.handleEvent(sliceEvent("DELETED", makeSlice("ns1", "svc1-b", "svc1", [])));
  const s2 = t.snapshot("IPv4");
  assert.deepEqual([...s2.changed], [KEY]);
  assert.deepEqual(s2.services.get(KEY)!.allEndpoints.map((e) => e.ip), ["10.0.0.1"]);
  assert.equal(s2.services.get(KEY)!.hasAnyEndpoints, false);
});

Deno.test("ProxyTracker keeps the previous version of an invalid update and reports it", () => {
  const invalid: [ObjectKind, string, string][] = [];
  const t = tracker(invalid);
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1")));
  t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1" }])));
  t.snapshot("IPv4");
  t.handleEvent(svcEvent("MODIFIED", makeService("ns1", "svc1", { clusterIP: "172.30.0.300" })));
  t.handleEvent(
    sliceEvent("MODIFIED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1; rm -rf /" }])),
  );
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "bad", { ports: [{ port: 0 }] })));
  assert.deepEqual(invalid.map(([kind, key]) => [kind, key]), [
    ["Service", "ns1/svc1"],
    ["EndpointSlice", "ns1/svc1-a"],
    ["Service", "ns1/bad"],
  ]);
  assert.match(invalid[0]![2], /spec\.clusterIP "172\.30\.0\.300"/);
  assert.deepEqual(t.pending(), { services: 0, endpoints: 0 });
  const s = t.snapshot("IPv4");
  assert.deepEqual([...s.changed], []);
  assert.equal(s.services.get(KEY)!.info.clusterIP, "172.30.0.1");
  assert.equal(s.services.get(KEY)!.allEndpoints[0]!.ip, "10.0.0.1");
  // Deletes always apply, even for an object whose last update was rejected.
  t.handleEvent(svcEvent("DELETED", makeService("ns1", "svc1", { clusterIP: "172.30.0.300" })));
  assert.equal(t.snapshot("IPv4").services.size, 0);
});

Deno.test("ProxyTracker forces a full sync when this node's labels change", () => {
  const t = tracker();
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1")));
  t.handleEvent(sliceEvent(
    "ADDED",
    makeSlice("ns1", "svc1-a", "svc1", [
      { ip: "10.0.0.1", forZones: ["zone-a"] },
      { ip: "10.0.0.2", forZones: ["zone-b"] },
    ]),
  ));
  t.handleEvent(nodeEvent("ADDED", makeNode({ "topology.kubernetes.io/zone": "zone-a" })));
  t.handleEvent(
    nodeEvent(
      "ADDED",
      makeNode({ "topology.kubernetes.io/zone": "zone-x" }, [], { name: "other" }),
    ),
  );
  const s1 = t.snapshot("IPv4");
  assert.deepEqual(s1.services.get(KEY)!.clusterEndpoints.map((e) => e.ip), ["10.0.0.1"]);
  assert.equal(t.snapshot("IPv4").forceFullSync, false);

  t.handleEvent(nodeEvent("MODIFIED", makeNode({ "topology.kubernetes.io/zone": "zone-b" })));
  const s2 = t.snapshot("IPv4");
  assert.equal(s2.forceFullSync, true);
  assert.deepEqual([...s2.changed], [KEY]);
  assert.deepEqual(s2.services.get(KEY)!.clusterEndpoints.map((e) => e.ip), ["10.0.0.2"]);
  assert.deepEqual(t.node()?.labels, { "topology.kubernetes.io/zone": "zone-b" });
  t.handleEvent(nodeEvent("DELETED", makeNode()));
  assert.equal(t.node(), undefined);
});

Deno.test("ProxyTracker snapshots each family independently", () => {
  const t = tracker();
  t.handleEvent(
    svcEvent("ADDED", makeService("ns1", "svc1", { clusterIPs: ["172.30.0.1", "fd00:30::1"] })),
  );
  t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", "svc1-v4", "svc1", [{ ip: "10.0.0.1" }])));
  t.handleEvent(
    sliceEvent(
      "ADDED",
      makeSlice("ns1", "svc1-v6", "svc1", [{ ip: "fd00:10::1" }], { addressType: "IPv6" }),
    ),
  );
  const v4 = t.snapshot("IPv4");
  assert.deepEqual(v4.services.get(KEY)!.allEndpoints.map((e) => e.ip), ["10.0.0.1"]);
  t.handleEvent(
    sliceEvent(
      "MODIFIED",
      makeSlice("ns1", "svc1-v6", "svc1", [{ ip: "fd00:10::2" }], { addressType: "IPv6" }),
    ),
  );
  assert.deepEqual([...t.snapshot("IPv4").changed], []);
  const v6 = t.snapshot("IPv6");
  assert.equal(v6.forceFullSync, true);
  assert.deepEqual(v6.node.ips, ["fd00::2"]);
  assert.equal(v6.services.get(KEY)!.info.clusterIP, "fd00:30::1");
  assert.deepEqual(v6.services.get(KEY)!.allEndpoints.map((e) => e.address), ["[fd00:10::2]:8080"]);
  t.handleEvent(sliceEvent("MODIFIED", makeSlice("ns1", "svc1-v4", "svc1", [{ ip: "10.0.0.3" }])));
  assert.deepEqual([...t.snapshot("IPv6").changed], []);
  assert.deepEqual([...t.snapshot("IPv4").changed], [KEY]);
});

Deno.test("ProxyTracker pending() counts queued changes and forgets net-zero ones", () => {
  const t = tracker();
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1")));
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc2")));
  t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1" }])));
  t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", "svc1-b", "svc1", [{ ip: "10.0.0.2" }])));
  assert.deepEqual(t.pending(), { services: 2, endpoints: 1 });
  t.snapshot("IPv4");
  assert.deepEqual(t.pending(), { services: 0, endpoints: 0 });
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc3")));
  t.handleEvent(svcEvent("DELETED", makeService("ns1", "svc3")));
  t.handleEvent(svcEvent("MODIFIED", makeService("ns1", "svc1")));
  assert.deepEqual(t.pending(), { services: 0, endpoints: 0 });
  t.handleEvent(sliceEvent("MODIFIED", makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.9" }])));
  assert.deepEqual(t.pending(), { services: 0, endpoints: 1 });
});

Deno.test("ProxyTracker isSynced() waits for Services and EndpointSlices", () => {
  const t = tracker();
  assert.equal(t.isSynced(), false);
  t.markSynced("Service");
  t.markSynced("Node");
  assert.equal(t.isSynced(), false);
  t.markSynced("EndpointSlice");
  assert.equal(t.isSynced(), true);
});

Deno.test("ProxyTracker takeChangeTriggerTimes() returns times of changed slices once", () => {
  const t = tracker([], Date.UTC(2024, 4, 1, 9));
  const at = (ip: string, time: string) =>
    makeSlice("ns1", "svc1-a", "svc1", [{ ip }], {
      annotations: { "endpoints.kubernetes.io/last-change-trigger-time": time },
    });
  t.handleEvent(sliceEvent("ADDED", at("10.0.0.1", "2024-05-01T08:00:00Z")));
  t.handleEvent(sliceEvent("MODIFIED", at("10.0.0.2", "2024-05-01T10:00:00Z")));
  t.handleEvent(sliceEvent("MODIFIED", at("10.0.0.2", "2024-05-01T11:00:00Z")));
  assert.deepEqual(t.takeChangeTriggerTimes(), [Date.UTC(2024, 4, 1, 10)]);
  assert.deepEqual(t.takeChangeTriggerTimes(), []);
});

Deno.test("ProxyTracker ignores objects handed to another proxy", () => {
  const t = tracker();
  t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1")));
  const owned = makeService("ns1", "svc1");
  owned.metadata!.labels = { "service.kubernetes.io/service-proxy-name": "other" };
  t.handleEvent(svcEvent("MODIFIED", owned));
  assert.equal(t.snapshot("IPv4").services.size, 0);
});

Deno.test("ProxyTracker at 10,000 services reports exactly the changed keys", () => {
  const t = tracker();
  const n = 10_000;
  const ip = (i: number) => `172.30.${Math.floor(i / 250)}.${(i % 250) + 1}`;
  const pod = (i: number, j: number) => `10.${Math.floor(i / 250)}.${(i % 250) + 1}.${j + 1}`;
  for (let i = 0; i < n; i++) {
    t.handleEvent(svcEvent("ADDED", makeService("ns1", `svc${i}`, { clusterIP: ip(i) })));
    const eps = Array.from({ length: (i % 3) + 1 }, (_, j) => ({ ip: pod(i, j) }));
    t.handleEvent(sliceEvent("ADDED", makeSlice("ns1", `svc${i}-a`, `svc${i}`, eps)));
  }
  const first = t.snapshot("IPv4");
  assert.equal(first.services.size, n);
  assert.equal(first.changed.size, n);
  let expectedEndpoints = 0;
  for (let i = 0; i < n; i++) expectedEndpoints += (i % 3) + 1;
  assert.equal(first.totalEndpoints, expectedEndpoints);

  t.handleEvent(
    sliceEvent("MODIFIED", makeSlice("ns1", "svc10-a", "svc10", [{ ip: "10.200.0.1" }])),
  );
  t.handleEvent(
    svcEvent(
      "MODIFIED",
      makeService("ns1", "svc20", { clusterIP: ip(20), ports: [{ name: "p80", port: 81 }] }),
    ),
  );
  t.handleEvent(svcEvent("DELETED", makeService("ns1", "svc30")));
  t.handleEvent(svcEvent("ADDED", makeService("ns2", "new", { clusterIP: "172.30.250.1" })));
  // No-op updates are not changes.
  t.handleEvent(svcEvent("MODIFIED", makeService("ns1", "svc40", { clusterIP: ip(40) })));
  t.handleEvent(
    sliceEvent(
      "MODIFIED",
      makeSlice("ns1", "svc50-a", "svc50", [{ ip: pod(50, 0) }, { ip: pod(50, 1) }, {
        ip: pod(50, 2),
      }]),
    ),
  );
  const second = t.snapshot("IPv4");
  assert.deepEqual([...second.changed].sort(), [
    "ns1/svc10:p80/TCP",
    "ns1/svc20:p80/TCP",
    "ns1/svc30:p80/TCP",
    "ns2/new:p80/TCP",
  ]);
  assert.equal(second.forceFullSync, false);
  assert.equal(second.services.size, n);
  assert.equal(second.services.get("ns1/svc40:p80/TCP"), first.services.get("ns1/svc40:p80/TCP"));
  assert.equal(second.services.get("ns1/svc999:p80/TCP"), first.services.get("ns1/svc999:p80/TCP"));
});

Deno.test("ProxyTracker handleEvent() says a sync is due only when something changed", () => {
  const t = tracker();
  const withVersion = <T extends { metadata?: object }>(o: T, rv: string): T => ({
    ...o,
    metadata: { ...o.metadata, resourceVersion: rv },
  });
  assert.equal(t.handleEvent(svcEvent("ADDED", makeService("ns1", "svc1"))), true);
  const slice = makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1" }]);
  assert.equal(t.handleEvent(sliceEvent("ADDED", slice)), true);
  assert.equal(t.handleEvent(nodeEvent("ADDED", makeNode({ zone: "a" }))), true);
  t.snapshot("IPv4");
  t.snapshot("IPv6");
  // A relist from a server with a new history: same content, new resourceVersions.
  const same = svcEvent("MODIFIED", withVersion(makeService("ns1", "svc1"), "900"));
  assert.equal(t.handleEvent(same), false);
  assert.equal(t.handleEvent(sliceEvent("MODIFIED", withVersion(slice, "901"))), false);
  assert.equal(
    t.handleEvent(nodeEvent("MODIFIED", withVersion(makeNode({ zone: "a" }), "902"))),
    false,
  );
  assert.deepEqual(t.pending(), { services: 0, endpoints: 0 });
  const moved = makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.2" }]);
  assert.equal(t.handleEvent(sliceEvent("MODIFIED", moved)), true);
  assert.equal(t.handleEvent(nodeEvent("MODIFIED", makeNode({ zone: "b" }))), true);
});
