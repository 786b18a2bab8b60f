/**
 * The IPVS tracer over what lib/backends/ipvs renders for hand-built states: iptables with
 * ipset matches, then the virtual server and its real servers. Decisions and paths.
 */
import { MODE_CONFIG_SECTIONS } from "../../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { defaultConfig } from "../../../lib/config/mod.ts";
import type { TraceResult } from "../../../lib/trace/decision.ts";
import { ipvsTracer } from "../../../lib/backends/ipvs/tracer.ts";
import { handState, NODE, NODE_IP, packet } from "../../trace/mode_tracer_fixtures.ts";

const config = {
  ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
  clusterCIDRs: ["10.0.0.0/8"],
  mode: "ipvs" as const,
};
const rules = ipvsTracer.rendered(config, handState());
const trace = (p: ReturnType<typeof packet>): TraceResult => ipvsTracer.trace(rules, p, NODE);

const half = (a: string, b: string) => [
  { address: a, probability: 0.5 },
  { address: b, probability: 0.5 },
];

Deno.test("ipvs trace: a pod reaches a ClusterIP's virtual server and both real servers", () => {
  const r = trace(packet("pod", "10.0.3.3", "172.30.0.10", 80));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/web:http",
    endpoints: half("10.0.1.1:8080", "10.0.2.2:8080"),
    masquerade: false,
    affinitySeconds: 0,
  });
  assert.deepEqual(r.path, [
    "nat:PREROUTING",
    "nat:KUBE-SERVICES",
    // A VIP is a local address, so it passes through the NodePort chain (and out again).
    "nat:KUBE-NODE-PORT",
    "filter:INPUT",
    "filter:KUBE-IPVS-FILTER",
    "filter:KUBE-PROXY-FIREWALL",
    "filter:KUBE-NODE-PORT",
    "virtual-server[172.30.0.10:80/TCP rr]",
    "real-server[10.0.1.1:8080]",
    "real-server[10.0.2.2:8080]",
    "nat:POSTROUTING",
    "nat:KUBE-POSTROUTING",
  ]);
});

Deno.test("ipvs trace: ClusterIP traffic from outside the pod network is marked and masqueraded", () => {
  for (
    const p of [
      packet("node", NODE_IP, "172.30.0.10", 80),
      packet("external", "203.0.113.2", "172.30.0.10", 80),
    ]
  ) {
    const r = trace(p);
    assert.equal(r.decision.kind === "forward" && r.decision.masquerade, true, p.source);
    assert.ok(r.path.includes("nat:KUBE-MARK-MASQ"), r.path.join(" > "));
  }
});

Deno.test("ipvs trace: a NodePort is one virtual server per node IP, marked by KUBE-NODE-PORT", () => {
  const r = trace(packet("external", "203.0.113.2", NODE_IP, 30080));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/web:http",
    endpoints: half("10.0.1.1:8080", "10.0.2.2:8080"),
    masquerade: true,
    affinitySeconds: 0,
  });
  assert.ok(r.path.includes("nat:KUBE-NODE-PORT"));
  assert.ok(r.path.includes("virtual-server[192.168.0.2:30080/TCP rr]"));
});

Deno.test("ipvs trace: a virtual server without real servers is refused by the kernel", () => {
  for (const [to, port] of [["172.30.0.14", 80], [NODE_IP, 30084]] as const) {
    const r = trace(packet("external", "203.0.113.2", to, port));
    assert.deepEqual(r.decision, {
      kind: "reject",
      servicePort: "ns1/empty:http",
      reason: "no-endpoints",
    });
    assert.ok(r.path.at(-1)!.startsWith("virtual-server["), r.path.join(" > "));
  }
});

Deno.test("ipvs trace: loadBalancerSourceRanges drop other sources in KUBE-SOURCE-RANGES-FIREWALL", () => {
  const ok = trace(packet("external", "203.0.113.2", "5.6.7.8", 80));
  assert.deepEqual(ok.decision, {
    kind: "forward",
    servicePort: "ns1/lb:http",
    endpoints: [{ address: "10.0.1.3:8080", probability: 1 }],
    masquerade: true,
    affinitySeconds: 0,
  });
  assert.ok(ok.path.includes("nat:KUBE-LOAD-BALANCER"));
  const no = trace(packet("external", "198.51.100.7", "5.6.7.8", 80));
  assert.deepEqual(no.decision, {
    kind: "drop",
    servicePort: "ns1/lb:http",
    reason: "source-range",
  });
  assert.equal(no.path.at(-1), "filter:KUBE-SOURCE-RANGES-FIREWALL");
  // The node reaching the LB IP from the LB IP itself (its source for a local address).
  const fromNode = trace(packet("node", "5.6.7.8", "5.6.7.8", 80));
  assert.deepEqual(fromNode.decision, {
    kind: "drop",
    servicePort: "ns1/lb:http",
    reason: "source-range",
  });
  assert.equal(fromNode.path.at(-1), "filter:KUBE-IPVS-OUT-FILTER");
});

Deno.test("ipvs trace: ETP Local sends outside traffic to the local endpoint without SNAT", () => {
  const r = trace(packet("external", "203.0.113.2", "1.2.3.4", 53, "udp"));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/dns:dns",
    endpoints: [{ address: "10.0.2.4:5353", probability: 1 }],
    masquerade: false,
    affinitySeconds: 0,
  });
  assert.ok(r.path.includes("virtual-server[1.2.3.4:53/UDP rr]"));
});

Deno.test("ipvs trace: ETP Local without a local endpoint falls back to every endpoint (PR #97081)", () => {
  const r = trace(packet("external", "203.0.113.2", "1.2.3.5", 80));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/far:http",
    endpoints: [{ address: "10.0.1.5:8080", probability: 1 }],
    masquerade: false,
    affinitySeconds: 0,
  });
});

Deno.test("ipvs trace: ITP Local without a local endpoint leaves the virtual server empty", () => {
  const r = trace(packet("pod", "10.0.3.3", "172.30.0.16", 80));
  // The kernel cannot tell "no local endpoint" from "no endpoint": both are an empty server.
  assert.deepEqual(r.decision, {
    kind: "reject",
    servicePort: "ns1/itp:http",
    reason: "no-endpoints",
  });
});

Deno.test("ipvs trace: persistence is the affinity timeout", () => {
  const r = trace(packet("pod", "10.0.3.3", "172.30.0.15", 80));
  assert.deepEqual(r.decision, {
    kind: "forward",
    servicePort: "ns1/sticky:http",
    endpoints: half("10.0.1.6:8080", "10.0.1.7:8080"),
    masquerade: false,
    affinitySeconds: 600,
  });
  assert.ok(r.path.includes("virtual-server[172.30.0.15:80/TCP rr, persistent 600s]"));
});

Deno.test("ipvs trace: an unused port of a VIP is rejected by KUBE-IPVS-FILTER", () => {
  for (
    const p of [
      packet("pod", "10.0.3.3", "172.30.0.10", 81),
      packet("node", NODE_IP, "172.30.0.10", 81),
    ]
  ) {
    const r = trace(p);
    assert.deepEqual(
      r.decision,
      { kind: "reject", servicePort: "", reason: "unused-port" },
      p.source,
    );
    assert.equal(r.path.at(-1), "filter:KUBE-IPVS-FILTER");
  }
});

Deno.test("ipvs trace: a pod reaching itself is hairpin-masqueraded, not counted", () => {
  const r = trace(packet("pod", "10.0.2.2", "172.30.0.10", 80));
  assert.equal(r.decision.kind === "forward" && r.decision.masquerade, false);
});

Deno.test("ipvs trace: traffic to no virtual server passes", () => {
  assert.deepEqual(trace(packet("pod", "10.0.3.3", "8.8.8.8", 80)).decision, { kind: "pass" });
  assert.deepEqual(trace(packet("external", "203.0.113.2", NODE_IP, 22)).decision, {
    kind: "pass",
  });
});

Deno.test("ipvs trace: a rule with a match IPVS mode never writes is refused by name", () => {
  const odd = {
    ...rules,
    iptables:
      "*nat\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\n-A KUBE-SERVICES -m statistic --mode random -j ACCEPT\nCOMMIT\n",
  };
  assert.throws(
    () => ipvsTracer.trace(odd, packet("pod", "10.0.3.3", "172.30.0.10", 80), NODE),
    /unknown match "-m statistic"/,
  );
});

Deno.test("ipvs trace: with --detect-local-mode InterfaceNamePrefix pods come in on `-i veth+`", () => {
  const byIface = ipvsTracer.rendered({
    ...config,
    detectLocalMode: "InterfaceNamePrefix",
    detectLocal: { ...config.detectLocal, interfaceNamePrefix: "veth" },
  }, handState());
  assert.match(byIface.iptables, / ! -i veth\+ -j KUBE-MARK-MASQ/);
  const masq = (p: ReturnType<typeof packet>) => {
    const d = ipvsTracer.trace(byIface, p, NODE).decision;
    return d.kind === "forward" && d.masquerade;
  };
  assert.equal(masq(packet("pod", "10.0.3.3", "172.30.0.10", 80)), false);
  assert.equal(masq(packet("external", "10.0.3.3", "172.30.0.10", 80)), true);
});
