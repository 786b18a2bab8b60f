import assert from "node:assert/strict";
import type { V1EndpointSlice } from "@kubernetes/client-node";
import { validateEndpointSlice } from "../../lib/proxy/mod.ts";
import { lastChangeTriggerTime } from "../../lib/proxy/validate_endpoint_slice.ts";
import { makeSlice } from "./fixtures.ts";

function reason(slice: V1EndpointSlice): string {
  const res = validateEndpointSlice(slice);
  assert.equal(res.ok, false, "expected a rejection");
  return res.ok ? "" : res.reason;
}

Deno.test("validateEndpointSlice() applies upstream's condition defaults", () => {
  const res = validateEndpointSlice(makeSlice("ns1", "svc1-abc", "svc1", [
    { ip: "10.0.0.1" },
    { ip: "10.0.0.2", ready: false, terminating: true },
    { ip: "10.0.0.3", ready: false, serving: false },
  ]));
  assert.ok(res.ok);
  assert.equal(res.value.serviceKey, "ns1/svc1");
  assert.equal(res.value.key, "ns1/svc1-abc");
  assert.deepEqual(
    res.value.endpoints.map((e) => [e.ip, e.ready, e.serving, e.terminating]),
    [
      ["10.0.0.1", true, true, false],
      ["10.0.0.2", false, true, true],
      ["10.0.0.3", false, false, false],
    ],
  );
});

Deno.test("validateEndpointSlice() shares one empty hint list among endpoints without hints", () => {
  const res = validateEndpointSlice(makeSlice("ns1", "s", "svc1", [
    { ip: "10.0.0.1" },
    { ip: "10.0.0.2" },
  ]));
  assert.ok(res.ok);
  const [a, b] = res.value.endpoints;
  assert.deepEqual([a?.zoneHints, a?.nodeHints], [[], []]);
  assert.equal(a?.zoneHints, b?.nodeHints);
  assert.ok(Object.isFrozen(a?.zoneHints));
});

Deno.test("validateEndpointSlice() keeps node, zone and sorted hints", () => {
  const res = validateEndpointSlice(makeSlice("ns1", "s", "svc1", [
    {
      ip: "fd00:10::0a",
      nodeName: "node-a",
      zone: "zone-a",
      forZones: ["zone-b", "zone-a"],
      forNodes: ["node-a"],
    },
  ], { addressType: "IPv6" }));
  assert.ok(res.ok);
  assert.deepEqual(res.value.endpoints[0], {
    ip: "fd00:10::a",
    ready: true,
    serving: true,
    terminating: false,
    nodeName: "node-a",
    zone: "zone-a",
    zoneHints: ["zone-a", "zone-b"],
    nodeHints: ["node-a"],
  });
});

Deno.test("validateEndpointSlice() rejects bad values with a reason naming the field", () => {
  const cases: [V1EndpointSlice, string][] = [
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.256" }]),
      'endpoints[0].addresses[0] "10.0.0.256"',
    ],
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "fd00:10::1" }]),
      'endpoints[0].addresses[0] "fd00:10::1" is not an IPv4',
    ],
    [makeSlice("ns1", "s", "svc1", [], { ports: [{ name: "p80", port: 0 }] }), 'ports[0].port "0"'],
    [
      makeSlice("ns1", "s", "svc1", [], { ports: [{ name: "p", port: 80, protocol: "ICMP" }] }),
      'ports[0].protocol "ICMP"',
    ],
    [
      makeSlice("ns1", "s", "svc1", [], { ports: [{ name: "P_80", port: 80 }] }),
      'ports[0].name "P_80"',
    ],
    [makeSlice("ns1", "s", "svc1", [], { addressType: "IPv5" }), 'addressType "IPv5"'],
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1", nodeName: "Node A" }]),
      'endpoints[0].nodeName "Node A"',
    ],
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1" }, { ip: "::ffff:10.0.0.2" }]),
      'endpoints[1].addresses[0] "::ffff:10.0.0.2" is not an IPv4',
    ],
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "fd00::1" }, { ip: "10.0.0.2" }], {
        addressType: "IPv6",
      }),
      'endpoints[1].addresses[0] "10.0.0.2" is not an IPv6',
    ],
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1", nodeName: "node..a" }]),
      'endpoints[0].nodeName "node..a" is not a valid node name',
    ],
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1", forNodes: ["node-a", "-node"] }]),
      'endpoints[0].hints.forNodes[1].name "-node" is not a valid name',
    ],
    [
      makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1", zone: "zone a" }]),
      'endpoints[0].zone "zone a"',
    ],
    [makeSlice("ns1", "s", "Svc1", []), 'metadata.labels["kubernetes.io/service-name"] "Svc1"'],
  ];
  for (const [slice, expected] of cases) {
    const r = reason(slice);
    assert.ok(r.startsWith('EndpointSlice "ns1/s": '), r);
    assert.ok(r.includes(expected), `${r} should include ${expected}`);
  }
  const noLabel = makeSlice("ns1", "s", "svc1", []);
  noLabel.metadata!.labels = {};
  assert.match(
    reason(noLabel),
    /metadata\.labels\["kubernetes\.io\/service-name"\] "" is not a valid/,
  );
  const dotted = validateEndpointSlice(
    makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1", nodeName: "node-a.zone-1.example" }]),
  );
  assert.ok(dotted.ok);
  assert.equal(dotted.value.endpoints[0]!.nodeName, "node-a.zone-1.example");
  const numeric = makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1" }]);
  numeric.endpoints![0]!.addresses = ["10.0.0.1", 7 as unknown as string];
  assert.match(reason(numeric), /endpoints\[0\]\.addresses\[1\] "7" is not a string/);
  const badReady = makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1" }]);
  (badReady.endpoints![0]!.conditions as Record<string, unknown>).ready = "yes";
  assert.match(reason(badReady), /endpoints\[0\]\.conditions\.ready "yes" is not a boolean/);
});

Deno.test("validateEndpointSlice() ignores FQDN slices, portless ports and addressless endpoints", () => {
  const fqdn = validateEndpointSlice(
    makeSlice("ns1", "s", "svc1", [{ ip: "example.com" }], { addressType: "FQDN" }),
  );
  assert.ok(fqdn.ok);
  assert.equal(fqdn.value.addressType, null);
  assert.deepEqual(fqdn.value.endpoints, []);

  const slice = makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1" }], {
    ports: [{ name: "x" }, { port: 80 }],
  });
  slice.endpoints!.push({ addresses: [] });
  const res = validateEndpointSlice(slice);
  assert.ok(res.ok);
  assert.deepEqual(res.value.ports, [{ name: "", port: 80, protocol: "TCP" }]);
  assert.equal(res.value.endpoints.length, 1);
});

Deno.test("lastChangeTriggerTime() parses the annotation and ignores garbage", () => {
  const at = (v: string) =>
    lastChangeTriggerTime(
      makeSlice("ns1", "s", "svc1", [], {
        annotations: { "endpoints.kubernetes.io/last-change-trigger-time": v },
      }),
    );
  assert.equal(at("2024-05-01T10:00:00Z"), Date.UTC(2024, 4, 1, 10));
  assert.equal(at("yesterday"), undefined);
  assert.equal(lastChangeTriggerTime(makeSlice("ns1", "s", "svc1", [])), undefined);
});
