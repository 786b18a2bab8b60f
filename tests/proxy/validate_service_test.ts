import assert from "node:assert/strict";
import { validateService } from "../../lib/proxy/mod.ts";
import { servicePortsForFamily } from "../../lib/proxy/validate_service.ts";
import { makeService } from "./fixtures.ts";

function reject(spec: Record<string, unknown>, extra: Record<string, unknown> = {}): string {
  const res = validateService(makeService("ns1", "svc1", spec, extra));
  assert.equal(res.ok, false, "expected a rejection");
  return res.ok ? "" : res.reason;
}

Deno.test("validateService() converts a ClusterIP service into one ServicePort", () => {
  const res = validateService(makeService("ns1", "svc1"));
  assert.ok(res.ok);
  assert.equal(res.value.key, "ns1/svc1");
  assert.deepEqual(res.value.ports.IPv6, []);
  assert.deepEqual(res.value.ports.IPv4, [{
    name: { namespace: "ns1", name: "svc1", port: "p80", protocol: "TCP" },
    clusterIP: "172.30.0.1",
    port: 80,
    protocol: "TCP",
    nodePort: 0,
    externalIPs: [],
    loadBalancerIPs: [],
    loadBalancerSourceRanges: [],
    stickyMaxAgeSeconds: 0,
    externalPolicyLocal: false,
    internalPolicyLocal: false,
    healthCheckNodePort: 0,
  }]);
});

Deno.test("validateService() rejects a bad cluster IP naming the field and value", () => {
  assert.equal(
    reject({ clusterIP: "10.0.0.300" }),
    'Service "ns1/svc1": spec.clusterIP "10.0.0.300" is not a valid IP address',
  );
});

Deno.test("validateService() rejects each kind of bad value with a reason naming the field", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ ports: [{ port: 70000 }] }, 'spec.ports[0].port "70000"'],
    [{ ports: [{ port: "80" }] }, 'spec.ports[0].port "80"'],
    [{ ports: [{ port: 80, protocol: "HTTP" }] }, 'spec.ports[0].protocol "HTTP"'],
    [{ ports: [{ port: 80, name: "Bad_Name" }] }, 'spec.ports[0].name "Bad_Name"'],
    [
      { type: "NodePort", ports: [{ port: 80, nodePort: 65536 }] },
      'spec.ports[0].nodePort "65536"',
    ],
    [
      { ports: [{ name: "a", port: 80 }, { name: "a", port: 81 }] },
      'spec.ports[1].name "a" duplicates spec.ports[0]',
    ],
    [{ externalIPs: ["203.0.113.999"] }, 'spec.externalIPs[0] "203.0.113.999"'],
    [
      { loadBalancerSourceRanges: ["203.0.113.0/33"] },
      'spec.loadBalancerSourceRanges[0] "203.0.113.0/33"',
    ],
    [{ type: "Weird" }, 'spec.type "Weird"'],
    [{ sessionAffinity: "Sticky" }, 'spec.sessionAffinity "Sticky"'],
    [
      { sessionAffinity: "ClientIP", sessionAffinityConfig: { clientIP: { timeoutSeconds: 0 } } },
      'spec.sessionAffinityConfig.clientIP.timeoutSeconds "0"',
    ],
    [{ externalTrafficPolicy: "local" }, 'spec.externalTrafficPolicy "local"'],
    [{ internalTrafficPolicy: 7 }, 'spec.internalTrafficPolicy "7" is not a string'],
    [{ healthCheckNodePort: -1 }, 'spec.healthCheckNodePort "-1"'],
    [
      { clusterIPs: ["172.30.0.2"] },
      'spec.clusterIPs[0] "172.30.0.2" does not match spec.clusterIP',
    ],
  ];
  for (const [spec, expected] of cases) {
    const reason = reject(spec);
    assert.ok(reason.startsWith('Service "ns1/svc1": '), reason);
    assert.ok(reason.includes(expected), `${reason} should include ${expected}`);
  }
});

Deno.test("validateService() rejects a bad load balancer ingress IP and bad names", () => {
  assert.match(
    reject({ type: "LoadBalancer" }, { status: { loadBalancer: { ingress: [{ ip: "1.2.3" }] } } }),
    /status\.loadBalancer\.ingress\[0\]\.ip "1\.2\.3" is not a valid IP address/,
  );
  const bad = validateService(makeService("NS1", "svc1"));
  assert.ok(!bad.ok);
  assert.match(
    bad.reason,
    /^Service "NS1\/svc1": metadata\.namespace "NS1" is not a valid DNS-1123 label/,
  );
  const noName = validateService({ metadata: { namespace: "ns1" }, spec: {} });
  assert.ok(!noName.ok);
  assert.match(noName.reason, /metadata\.name "" is not a valid DNS-1123 label/);
});

Deno.test("validateService() ignores ExternalName and headless services without error", () => {
  for (
    const spec of [
      { type: "ExternalName", externalName: "example.com", clusterIP: "" },
      { clusterIP: "None" },
      { clusterIP: "" },
      { clusterIP: "None", ports: [{ port: 99999 }] },
    ]
  ) {
    const res = validateService(makeService("ns1", "svc1", spec));
    assert.ok(res.ok);
    assert.deepEqual(res.value.ports, { IPv4: [], IPv6: [] });
  }
});

Deno.test("validateService() splits a dual-stack service by family", () => {
  const svc = makeService("ns1", "svc1", {
    type: "LoadBalancer",
    clusterIP: "FD00:30::0001",
    clusterIPs: ["fd00:30::1", "172.30.0.1"],
    externalIPs: ["203.0.113.10", "2001:db8::10"],
    loadBalancerSourceRanges: [" 203.0.113.0/24 ", "2001:db8::/64", "198.51.100.7/24"],
    ports: [{ name: "p80", port: 80, nodePort: 30080 }],
  }, {
    status: {
      loadBalancer: {
        ingress: [
          { ip: "198.51.100.1" },
          { ip: "2001:db8::1", ipMode: "VIP" },
          { ip: "198.51.100.2", ipMode: "Proxy" },
          { hostname: "lb.example.com" },
        ],
      },
    },
  });
  const v4 = servicePortsForFamily(svc, "IPv4");
  const v6 = servicePortsForFamily(svc, "IPv6");
  assert.ok(v4.ok && v6.ok);
  assert.equal(v4.value[0]?.clusterIP, "172.30.0.1");
  assert.equal(v6.value[0]?.clusterIP, "fd00:30::1");
  assert.deepEqual(v4.value[0]?.externalIPs, ["203.0.113.10"]);
  assert.deepEqual(v6.value[0]?.externalIPs, ["2001:db8::10"]);
  assert.deepEqual(v4.value[0]?.loadBalancerIPs, ["198.51.100.1"]);
  assert.deepEqual(v6.value[0]?.loadBalancerIPs, ["2001:db8::1"]);
  assert.deepEqual(v4.value[0]?.loadBalancerSourceRanges, ["203.0.113.0/24", "198.51.100.0/24"]);
  assert.deepEqual(v6.value[0]?.loadBalancerSourceRanges, ["2001:db8::/64"]);
  assert.equal(v4.value[0]?.nodePort, 30080);
});

Deno.test("validateService() gives a single-stack IPv6 service no IPv4 ports", () => {
  const res = validateService(makeService("ns1", "svc1", { clusterIP: "fd00:30::5" }));
  assert.ok(res.ok);
  assert.deepEqual(res.value.ports.IPv4, []);
  assert.equal(res.value.ports.IPv6[0]?.clusterIP, "fd00:30::5");
});

Deno.test("validateService() defaults protocol to TCP and affinity timeout to 10800", () => {
  const res = validateService(makeService("ns1", "svc1", {
    ports: [{ port: 53 }, { port: 53, protocol: "UDP" }],
    sessionAffinity: "ClientIP",
  }));
  assert.ok(res.ok);
  assert.deepEqual(res.value.ports.IPv4.map((p) => p.protocol), ["TCP", "UDP"]);
  assert.deepEqual(res.value.ports.IPv4.map((p) => p.stickyMaxAgeSeconds), [10800, 10800]);
  const custom = validateService(makeService("ns1", "svc1", {
    sessionAffinity: "ClientIP",
    sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
  }));
  assert.ok(custom.ok);
  assert.equal(custom.value.ports.IPv4[0]?.stickyMaxAgeSeconds, 60);
});

Deno.test("validateService() sets externalPolicyLocal only for externally accessible services", () => {
  const policy = (spec: Record<string, unknown>) => {
    const res = validateService(makeService("ns1", "svc1", spec));
    assert.ok(res.ok);
    const p = res.value.ports.IPv4[0]!;
    return [p.externalPolicyLocal, p.internalPolicyLocal, p.healthCheckNodePort];
  };
  assert.deepEqual(policy({ externalTrafficPolicy: "Local" }), [false, false, 0]);
  assert.deepEqual(
    policy({ externalTrafficPolicy: "Local", externalIPs: ["203.0.113.10"] }),
    [true, false, 0],
  );
  assert.deepEqual(
    policy({ type: "NodePort", externalTrafficPolicy: "Local", healthCheckNodePort: 30000 }),
    [
      true,
      false,
      0,
    ],
  );
  assert.deepEqual(
    policy({ type: "LoadBalancer", externalTrafficPolicy: "Local", healthCheckNodePort: 30000 }),
    [true, false, 30000],
  );
  assert.deepEqual(policy({ internalTrafficPolicy: "Local" }), [false, true, 0]);
});
