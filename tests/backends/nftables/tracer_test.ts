/**
 * The nftables tracer over tables rendered by lib/backends/nftables for hand-built states:
 * decisions and paths for every feature the renderer branches on.
 */
import { MODE_CONFIG_SECTIONS } from "../../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { defaultConfig } from "../../../lib/config/mod.ts";
import { nftablesTracer } from "../../../lib/backends/nftables/tracer.ts";
import type { TraceResult } from "../../../lib/trace/decision.ts";
import { handState, NODE, NODE_IP, packet } from "../../trace/mode_tracer_fixtures.ts";

const config = {
  ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
  clusterCIDRs: ["10.0.0.0/8"],
};
const table = nftablesTracer.rendered(config, handState());
const trace = (p: ReturnType<typeof packet>): TraceResult => nftablesTracer.trace(table, p, NODE);

const half = (a: string, b: string) => [
  { address: a, probability: 0.5 },
  { address: b, probability: 0.5 },
];

Deno.test("nftables trace: a pod reaches a ClusterIP through the shared 2-endpoint chain", () => {
  const r = trace(packet("pod", "10.0.3.3", "172.30.0.10", 80));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/web:http",
    endpoints: half("10.0.1.1:8080", "10.0.2.2:8080"),
    masquerade: false,
    affinitySeconds: 0,
  });
  assert.deepEqual(r.path.slice(0, 8), [
    "filter-prerouting-pre-dnat",
    "firewall-check",
    "nat-prerouting",
    "services",
    "service-ips[172.30.0.10 . tcp . 80]",
    "service-tcp-2",
    "service-endpoints-tcp[172.30.0.10 . 80 . 0]",
    "service-endpoints-tcp[172.30.0.10 . 80 . 1]",
  ]);
});

Deno.test("nftables trace: ClusterIP traffic from the node and from outside is masqueraded", () => {
  for (
    const p of [
      packet("node", NODE_IP, "172.30.0.10", 80),
      packet("external", "203.0.113.2", "172.30.0.10", 80),
    ]
  ) {
    const r = trace(p);
    assert.equal(r.decision.kind, "forward");
    assert.equal(r.decision.kind === "forward" && r.decision.masquerade, true, p.source);
    assert.ok(r.path.includes("mark-for-masquerade"), r.path.join(" > "));
  }
});

Deno.test("nftables trace: a NodePort from outside is DNATed via service-nodeports and masqueraded", () => {
  const r = trace(packet("external", "203.0.113.2", NODE_IP, 30080));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/web:http",
    endpoints: half("10.0.1.1:8080", "10.0.2.2:8080"),
    masquerade: true,
    affinitySeconds: 0,
  });
  assert.ok(r.path.includes("service-nodeports[tcp . 30080]"));
  assert.ok(r.path.includes("nodeport-tcp-2"));
  assert.ok(r.path.includes("nodeport-endpoints-tcp[30080 . 1]"));
});

Deno.test("nftables trace: a service without endpoints is rejected, ClusterIP and NodePort", () => {
  const c = trace(packet("pod", "10.0.3.3", "172.30.0.14", 80));
  assert.deepEqual(c.decision, {
    kind: "reject",
    servicePort: "ns1/empty:http",
    reason: "no-endpoints",
  });
  assert.deepEqual(c.path.slice(-3), [
    "service-endpoints-check",
    "no-endpoint-services[172.30.0.14 . tcp . 80]",
    "reject-chain",
  ]);
  const n = trace(packet("external", "203.0.113.2", NODE_IP, 30084));
  assert.deepEqual(n.decision, {
    kind: "reject",
    servicePort: "ns1/empty:http",
    reason: "no-endpoints",
  });
  assert.ok(n.path.includes("no-endpoint-nodeports[tcp . 30084]"), n.path.join(" > "));
  assert.ok(n.path.includes("filter-input"));
});

Deno.test("nftables trace: loadBalancerSourceRanges admit 203.0.113.0/24 and drop the rest", () => {
  const ok = trace(packet("external", "203.0.113.2", "5.6.7.8", 80));
  assert.deepEqual(ok.decision, {
    kind: "forward",
    servicePort: "ns1/lb:http",
    endpoints: [{ address: "10.0.1.3:8080", probability: 1 }],
    masquerade: true,
    affinitySeconds: 0,
  });
  assert.ok(ok.path.includes("external-tcp-1"));
  const no = trace(packet("external", "198.51.100.7", "5.6.7.8", 80));
  assert.deepEqual(no.decision, {
    kind: "drop",
    servicePort: "ns1/lb:http",
    reason: "source-range",
  });
  assert.deepEqual(no.path, ["filter-prerouting-pre-dnat", "firewall-check"]);
  // NodePorts are not subject to source ranges.
  assert.equal(trace(packet("external", "198.51.100.7", NODE_IP, 30081)).decision.kind, "forward");
});

Deno.test("nftables trace: ETP Local keeps the client IP and uses only the local endpoint", () => {
  const r = trace(packet("external", "203.0.113.2", "1.2.3.4", 53, "udp"));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/dns:dns",
    endpoints: [{ address: "10.0.2.4:5353", probability: 1 }],
    masquerade: false,
    affinitySeconds: 0,
  });
  assert.ok(r.path.includes("external-local-udp-1-2"));
  const np = trace(packet("external", "203.0.113.2", NODE_IP, 30082, "udp"));
  assert.deepEqual(np.decision.kind === "forward" && np.decision.endpoints, [
    { address: "10.0.2.4:5353", probability: 1 },
  ]);
});

Deno.test("nftables trace: ETP Local short-circuits pod and node traffic to every endpoint", () => {
  const pod = trace(packet("pod", "10.0.3.3", "1.2.3.4", 53, "udp"));
  assert.deepEqual(pod.decision.kind === "forward" && pod.decision, {
    kind: "forward",
    servicePort: "ns1/dns:dns",
    endpoints: half("10.0.1.4:5353", "10.0.2.4:5353"),
    masquerade: false,
    affinitySeconds: 0,
  });
  assert.ok(pod.path.includes("service-endpoints-udp[1.2.3.4 . 53 . 32768]"));
  const node = trace(packet("node", NODE_IP, "1.2.3.4", 53, "udp"));
  assert.equal(node.decision.kind === "forward" && node.decision.masquerade, true);
});

Deno.test("nftables trace: ETP Local without a local endpoint drops outside traffic", () => {
  const r = trace(packet("external", "203.0.113.2", "1.2.3.5", 80));
  assert.deepEqual(r.decision, {
    kind: "drop",
    servicePort: "ns1/far:http",
    reason: "no-local-endpoints",
  });
  assert.deepEqual(r.path.slice(-2), [
    "service-endpoints-check",
    "no-endpoint-services[1.2.3.5 . tcp . 80]",
  ]);
  // Pods still short-circuit to the remote endpoint.
  const pod = trace(packet("pod", "10.0.3.3", "1.2.3.5", 80));
  assert.equal(pod.decision.kind, "forward");
});

Deno.test("nftables trace: ITP Local without a local endpoint drops ClusterIP traffic", () => {
  const r = trace(packet("pod", "10.0.3.3", "172.30.0.16", 80));
  assert.deepEqual(r.decision, {
    kind: "drop",
    servicePort: "ns1/itp:http",
    reason: "no-local-endpoints",
  });
});

Deno.test("nftables trace: ClientIP affinity splits by hash and reports the timeout", () => {
  const r = trace(packet("pod", "10.0.3.3", "172.30.0.15", 80));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/sticky:http",
    endpoints: half("10.0.1.6:8080", "10.0.1.7:8080"),
    masquerade: false,
    affinitySeconds: 600,
  });
  assert.ok(
    r.path.some((s) => /^service-[A-Z0-9]{8}-ns1\/sticky\/tcp\/http$/.test(s)),
    r.path.join(" > "),
  );
  assert.ok(r.path.some((s) => s.startsWith("affinity-") && s.endsWith("{10.0.3.3}")));
});

Deno.test("nftables trace: an unused ClusterIP port is rejected by cluster-ips-check", () => {
  const r = trace(packet("pod", "10.0.3.3", "172.30.0.10", 81));
  assert.deepEqual(r.decision, { kind: "reject", servicePort: "", reason: "unused-port" });
  assert.equal(r.path.at(-1), "cluster-ips-check");
});

Deno.test("nftables trace: an unallocated address of a ServiceCIDR is dropped by cluster-ips-check", () => {
  const withCIDR = nftablesTracer.rendered(config, {
    ...handState(),
    serviceCIDRs: ["172.30.0.0/16"],
  });
  for (const source of ["pod", "node", "external"] as const) {
    const from = { pod: "10.0.3.3", node: NODE_IP, external: "203.0.113.2" }[source];
    const r = nftablesTracer.trace(withCIDR, packet(source, from, "172.30.9.9", 80), NODE);
    assert.deepEqual(r.decision, {
      kind: "drop",
      servicePort: "",
      reason: "unallocated-cluster-ip",
    });
    assert.equal(r.path.at(-1), "cluster-ips-check");
  }
  // Allocated ClusterIPs keep their verdicts; other addresses pass.
  const unused = nftablesTracer.trace(withCIDR, packet("pod", "10.0.3.3", "172.30.0.10", 81), NODE);
  assert.equal(unused.decision.kind === "reject" && unused.decision.reason, "unused-port");
  const outside = nftablesTracer.trace(withCIDR, packet("pod", "10.0.3.3", "172.31.0.1", 80), NODE);
  assert.deepEqual(outside.decision, { kind: "pass" });
  // Without a ServiceCIDR there is no such rule.
  assert.deepEqual(trace(packet("pod", "10.0.3.3", "172.30.9.9", 80)).decision, { kind: "pass" });
});

Deno.test("nftables trace: a pod reaching itself through its service is not counted as masqueraded", () => {
  const r = trace(packet("pod", "10.0.2.2", "172.30.0.10", 80));
  assert.equal(r.decision.kind === "forward" && r.decision.masquerade, false);
  // The hairpin rule marks it in postrouting.
  assert.equal(r.path.at(-1), "mark-for-masquerade");
});

Deno.test("nftables trace: traffic to no service passes untouched", () => {
  assert.deepEqual(trace(packet("pod", "10.0.3.3", "8.8.8.8", 80)).decision, { kind: "pass" });
  assert.deepEqual(trace(packet("external", "203.0.113.2", NODE_IP, 22)).decision, {
    kind: "pass",
  });
});

Deno.test("nftables trace: with --detect-local-mode BridgeInterface pods come in on iifname", () => {
  const byIface = nftablesTracer.rendered({
    ...config,
    detectLocalMode: "BridgeInterface",
    detectLocal: { ...config.detectLocal, bridgeInterface: "cbr0" },
  }, handState());
  assert.ok(byIface.chains.get("services")!.rules[0]!.includes('iifname != "cbr0"'));
  const masq = (p: ReturnType<typeof packet>) => {
    const d = nftablesTracer.trace(byIface, p, NODE).decision;
    return d.kind === "forward" && d.masquerade;
  };
  assert.equal(masq(packet("pod", "10.0.3.3", "172.30.0.10", 80)), false);
  assert.equal(masq(packet("external", "10.0.3.3", "172.30.0.10", 80)), true);
});
