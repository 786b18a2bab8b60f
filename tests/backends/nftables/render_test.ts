import assert from "node:assert/strict";
import { renderNftables } from "../../../lib/backends/nftables/render.ts";
import {
  ep,
  NODE_IP,
  NODE_IP6,
  sps,
  state,
  svc,
  variedServicePorts,
} from "../iptables/state_fixtures.ts";
import { elementsOf, rulesOf } from "./model_helpers.ts";

const CIDR = { clusterCIDRs: ["10.0.0.0/8"] };

Deno.test("renderNftables() writes upstream 1.34's base chains, hooks and priorities", () => {
  const m = renderNftables(state([]), CIDR).model;
  const hooks = Object.fromEntries(
    [...m.chains.values()].filter((c) => c.hook).map((c) => [c.name, c.hook]),
  );
  assert.deepEqual(hooks, {
    "filter-prerouting-pre-dnat": { type: "filter", hook: "prerouting", priority: -110 },
    "filter-output-pre-dnat": { type: "filter", hook: "output", priority: -110 },
    "filter-input": { type: "filter", hook: "input", priority: 0 },
    "filter-forward": { type: "filter", hook: "forward", priority: 0 },
    "filter-output": { type: "filter", hook: "output", priority: 0 },
    "nat-prerouting": { type: "nat", hook: "prerouting", priority: -100 },
    "nat-output": { type: "nat", hook: "output", priority: -100 },
    "nat-postrouting": { type: "nat", hook: "postrouting", priority: 100 },
  });
  assert.deepEqual(rulesOf(m, "filter-input"), [
    "ct state new jump nodeport-endpoints-check",
    "ct state new jump service-endpoints-check",
  ]);
  assert.deepEqual(
    rulesOf(m, "cluster-ips-check")[0]?.startsWith("ip daddr @cluster-ips reject"),
    true,
  );
  assert.equal(m.comment, "rules for kube-proxy");
});

Deno.test("renderNftables() sends every ClusterIP with N endpoints through one shared chain", () => {
  const ports = (n: number) =>
    Array.from(
      { length: n },
      (_, i) =>
        sps(svc({ name: `s${i}`, clusterIP: `172.30.1.${i + 1}` }), [
          ep(`10.1.${i}.1`, 8080),
          ep(`10.1.${i}.2`, 8080),
        ]),
    );
  const small = renderNftables(state(ports(3)), CIDR).model;
  const big = renderNftables(state(ports(40)), CIDR).model;
  assert.equal(small.chains.size, big.chains.size);
  assert.deepEqual(rulesOf(big, "service-tcp-2"), [
    "meta l4proto tcp dnat ip addr . port to ip daddr . tcp dport . numgen random mod 2 map @service-endpoints-tcp",
  ]);
  assert.deepEqual(elementsOf(small, "service-ips"), [
    '172.30.1.1 . tcp . 80 comment "ns1/s0:p80 cluster IP" : goto service-tcp-2',
    '172.30.1.2 . tcp . 80 comment "ns1/s1:p80 cluster IP" : goto service-tcp-2',
    '172.30.1.3 . tcp . 80 comment "ns1/s2:p80 cluster IP" : goto service-tcp-2',
  ]);
  assert.deepEqual(elementsOf(small, "service-endpoints-tcp").slice(0, 2), [
    "172.30.1.1 . 80 . 0 : 10.1.0.1 . 8080",
    "172.30.1.1 . 80 . 1 : 10.1.0.2 . 8080",
  ]);
  assert.deepEqual(elementsOf(small, "cluster-ips"), ["172.30.1.1", "172.30.1.2", "172.30.1.3"]);
  // ClusterIP traffic from outside the pod network is masqueraded, once for all services.
  assert.equal(
    rulesOf(small, "services")[0],
    'ip daddr @cluster-ips ip saddr != 10.0.0.0/8 jump mark-for-masquerade comment "masquerade clusterIP traffic from outside cluster"',
  );
});

Deno.test("renderNftables() rejects services without endpoints and drops Local ones without local endpoints", () => {
  const m = renderNftables(
    state([
      sps(svc({ name: "none", clusterIP: "172.30.0.1", nodePort: 30001 })),
      sps(svc({ name: "itp", clusterIP: "172.30.0.2", internalPolicyLocal: true }), [
        ep("10.0.0.5"),
      ]),
      sps(
        svc({ name: "etp", clusterIP: "172.30.0.3", nodePort: 30003, externalPolicyLocal: true }),
        [
          ep("10.0.0.6"),
        ],
      ),
    ]),
    CIDR,
  );
  assert.deepEqual(elementsOf(m.model, "no-endpoint-services"), [
    '172.30.0.1 . tcp . 80 comment "ns1/none:p80 cluster IP" : goto reject-chain',
    '172.30.0.2 . tcp . 80 comment "ns1/itp:p80 cluster IP" : drop',
  ]);
  assert.deepEqual(elementsOf(m.model, "no-endpoint-nodeports"), [
    'tcp . 30001 comment "ns1/none:p80 nodePort" : goto reject-chain',
    'tcp . 30003 comment "ns1/etp:p80 nodePort" : drop',
  ]);
  // ETP Local without local endpoints still short-circuits pod and node traffic.
  assert.deepEqual(elementsOf(m.model, "service-nodeports"), [
    'tcp . 30003 comment "ns1/etp:p80 nodePort" : goto nodeport-local-tcp-0-1',
  ]);
  const rules = rulesOf(m.model, "nodeport-local-tcp-0-1");
  assert.match(
    rules[0]!,
    /^ip saddr 10\.0\.0\.0\/8 meta l4proto .* offset 32768 map @nodeport-endpoints-tcp/,
  );
  assert.match(rules[1]!, /^fib saddr type local jump mark-for-masquerade/);
  assert.equal(rules.length, 3);
  assert.equal(m.noLocalEndpointsInternal, 1);
  assert.equal(m.noLocalEndpointsExternal, 1);
});

Deno.test("renderNftables() serves NodePorts on the primary node IP by default, everywhere on 0.0.0.0/0", () => {
  const ports = [sps(svc({ nodePort: 30080 }), [ep("10.0.0.5")])];
  const primary = renderNftables(state(ports), CIDR).model;
  assert.deepEqual(elementsOf(primary, "nodeport-ips"), [NODE_IP]);
  assert.ok(
    rulesOf(primary, "services").includes(
      "ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports",
    ),
  );
  const all = renderNftables(state(ports), { ...CIDR, nodePortAddresses: ["0.0.0.0/0"] });
  assert.deepEqual(elementsOf(all.model, "nodeport-ips"), []);
  assert.ok(
    rulesOf(all.model, "services").includes(
      "fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports",
    ),
  );
  assert.equal(all.config.loopbackRequested, true);
  // ETP Cluster NodePort traffic is masqueraded, then DNATed by the nodeport map.
  assert.deepEqual(rulesOf(primary, "nodeport-tcp-1"), [
    "jump mark-for-masquerade",
    "meta l4proto tcp dnat ip addr . port to tcp dport . numgen random mod 1 map @nodeport-endpoints-tcp",
  ]);
  assert.deepEqual(elementsOf(primary, "nodeport-endpoints-tcp"), ["30080 . 0 : 10.0.0.5 . 80"]);
});

Deno.test("renderNftables() keeps ETP Local endpoints and the short-circuit list under one key", () => {
  const m = renderNftables(
    state([
      sps(svc({ externalIPs: ["198.51.100.1"], externalPolicyLocal: true }), [
        ep("10.0.0.5", 80, { isLocal: true }),
        ep("10.0.0.6"),
      ]),
    ]),
    CIDR,
  ).model;
  assert.deepEqual(elementsOf(m, "service-endpoints-tcp"), [
    "172.30.0.41 . 80 . 0 : 10.0.0.5 . 80",
    "172.30.0.41 . 80 . 1 : 10.0.0.6 . 80",
    "198.51.100.1 . 80 . 0 : 10.0.0.5 . 80",
    "198.51.100.1 . 80 . 32768 : 10.0.0.5 . 80",
    "198.51.100.1 . 80 . 32769 : 10.0.0.6 . 80",
  ]);
  assert.ok(elementsOf(m, "service-ips").some((e) => e.endsWith("goto external-local-tcp-1-2")));
  assert.deepEqual(elementsOf(m, "hairpin-connections"), ["10.0.0.5 . 10.0.0.5 . tcp . 80"]);
});

Deno.test("renderNftables() drops loadBalancerSourceRanges outsiders before DNAT", () => {
  const m = renderNftables(
    state([
      sps(
        svc({
          loadBalancerIPs: ["203.0.114.1"],
          loadBalancerSourceRanges: ["192.168.0.0/24", "192.168.0.128/25", "203.0.113.0/24"],
        }),
        [ep("10.0.0.5")],
      ),
    ]),
    CIDR,
  ).model;
  assert.deepEqual(elementsOf(m, "firewall-ips"), [
    '203.0.114.1 . tcp . 80 comment "ns1/svc1:p80"',
  ]);
  // The contained /25 is left out; the node IP is in a range, so the LB IP itself is allowed.
  assert.deepEqual(elementsOf(m, "firewall-allow"), [
    "203.0.114.1 . tcp . 80 . 192.168.0.0/24",
    "203.0.114.1 . tcp . 80 . 203.0.113.0/24",
    "203.0.114.1 . tcp . 80 . 203.0.114.1",
  ]);
  assert.deepEqual(rulesOf(m, "firewall-check"), [
    "ip daddr . meta l4proto . th dport @firewall-ips ip daddr . meta l4proto . th dport . ip saddr != @firewall-allow drop",
  ]);
});

Deno.test("renderNftables() gives ClientIP affinity services their own chains and timed sets", () => {
  const m = renderNftables(
    state([
      sps(svc({ stickyMaxAgeSeconds: 60, nodePort: 30080 }), [ep("10.0.0.5"), ep("10.0.0.6")]),
    ]),
    CIDR,
  ).model;
  const own = [...m.chains.keys()].filter((n) => n.includes("/"));
  assert.deepEqual(own.map((n) => n.replace(/-[A-Z2-7]{8}-/, "-H-")), [
    "service-H-ns1/svc1/tcp/p80",
    "external-H-ns1/svc1/tcp/p80",
  ]);
  const sets = [...m.sets.values()].filter((s) => s.name.startsWith("affinity-"));
  assert.equal(sets.length, 2);
  assert.deepEqual(sets[0]!.spec, ["type ipv4_addr", "flags dynamic,timeout", "timeout 60s"]);
  const rules = rulesOf(m, own[0]!);
  assert.match(
    rules[0]!,
    /^meta l4proto tcp ip saddr @affinity-\S+ update @affinity-\S+ \{ ip saddr \} dnat ip to 10\.0\.0\.5:80$/,
  );
  assert.match(
    rules[3]!,
    /^meta l4proto tcp jhash ip saddr \. th sport mod 2 seed 0x6b707279 == 1 update .* dnat ip to 10\.0\.0\.6:80$/,
  );
  assert.deepEqual(rulesOf(m, own[1]!), ["jump mark-for-masquerade", `goto ${own[0]}`]);
});

Deno.test("renderNftables() renders IPv6 with ip6 words and keeps masqueradeAll", () => {
  const m = renderNftables(
    state([sps(svc({ clusterIP: "fd00:30::1" }), [ep("fd00:10::5")])], { family: "IPv6" }),
    { masqueradeAll: true },
  ).model;
  assert.equal(m.family, "ip6");
  assert.equal(
    rulesOf(m, "services")[0],
    'ip6 daddr @cluster-ips jump mark-for-masquerade comment "masquerade all clusterIP traffic"',
  );
  assert.deepEqual(elementsOf(m, "service-endpoints-tcp"), [
    "fd00:30::1 . 80 . 0 : fd00:10::5 . 80",
  ]);
  assert.deepEqual(elementsOf(m, "nodeport-ips"), [NODE_IP6]);
});

Deno.test("renderNftables() skips untrusted service ports: nothing breaks out of a quote", () => {
  const evil = svc({ name: 'x" ; flush ruleset ; "', clusterIP: "172.30.0.9" });
  const r = renderNftables(state([sps(evil, [ep("10.0.0.5")]), ...variedServicePorts(6)]), CIDR);
  assert.equal(r.skipped.length, 1);
  assert.match(r.skipped[0]!.reason, /bad name/);
  const text = JSON.stringify([...r.model.sets.values()].map((s) => [...s.elements]));
  assert.ok(!text.includes("flush ruleset"));
  assert.ok(!text.includes("172.30.0.9"));
});

Deno.test("renderNftables() reports a second service on the same address and port", () => {
  const r = renderNftables(
    state([
      sps(svc({ name: "a", clusterIP: "172.30.0.1" }), [ep("10.0.0.1")]),
      sps(svc({ name: "b", clusterIP: "172.30.0.2", externalIPs: ["172.30.0.1"] }), [
        ep("10.0.0.2"),
      ]),
    ]),
    CIDR,
  );
  assert.equal(r.conflicts.length >= 1, true);
  assert.equal(r.conflicts[0]!.key.includes("/b:"), true);
  assert.deepEqual(
    elementsOf(r.model, "service-endpoints-tcp").filter((e) => e.startsWith("172.30.0.1 ")),
    ["172.30.0.1 . 80 . 0 : 10.0.0.1 . 80"],
  );
});

Deno.test("renderNftables() drops traffic to unallocated ClusterIPs of the family's ServiceCIDRs", () => {
  const reject =
    'ip daddr @cluster-ips reject comment "Reject traffic to invalid ports of ClusterIPs"';
  assert.deepEqual(rulesOf(renderNftables(state([]), CIDR).model, "cluster-ips-check"), [reject]);
  const cidrs = ["172.30.0.0/16", "172.30.5.0/24", "fd00::/112", "10.96.0.0/12", "172.30.0.0/16"];
  const m = renderNftables(state([], { serviceCIDRs: cidrs }), CIDR).model;
  assert.deepEqual(rulesOf(m, "cluster-ips-check"), [
    reject,
    'ip daddr { 172.30.0.0/16, 10.96.0.0/12 } drop comment "Drop traffic to unallocated ClusterIPs"',
  ]);
  const m6 = renderNftables(state([], { family: "IPv6", serviceCIDRs: ["fd00::/112"] }), CIDR)
    .model;
  assert.deepEqual(
    rulesOf(m6, "cluster-ips-check")[1],
    'ip6 daddr { fd00::/112 } drop comment "Drop traffic to unallocated ClusterIPs"',
  );
});
