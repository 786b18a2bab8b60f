import assert from "node:assert/strict";
import { computeIpvsDesiredState } from "../../../lib/backends/ipvs/_desired_state.ts";
import { renderIpvsPayloads, renderIpvsText } from "../../../lib/backends/ipvs/_render.ts";
import {
  buildIpvsRestoreInput,
  missingIpvsJumps,
  renderIpvsIptablesRules,
} from "../../../lib/backends/ipvs/render_iptables.ts";
import { parseIptablesSave } from "../../../lib/netfilter/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, port, state, svc } from "./fixtures.ts";

const EMPTY_NODE_IPTABLES = `*nat
:KUBE-SERVICES - [0:0]
:KUBE-POSTROUTING - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-LOAD-BALANCER - [0:0]
:KUBE-MARK-MASQ - [0:0]
-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN
-A KUBE-SERVICES -m addrtype --dst-type LOCAL -j KUBE-NODE-PORT
-A KUBE-LOAD-BALANCER -j KUBE-MARK-MASQ
-A KUBE-POSTROUTING -m mark ! --mark 0x00004000/0x00004000 -j RETURN
-A KUBE-POSTROUTING -j MARK --xor-mark 0x00004000
-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully
-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000
-I OUTPUT -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-I PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES
-I POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING
COMMIT
*filter
:KUBE-FORWARD - [0:0]
:KUBE-NODE-PORT - [0:0]
:KUBE-PROXY-FIREWALL - [0:0]
:KUBE-SOURCE-RANGES-FIREWALL - [0:0]
:KUBE-IPVS-FILTER - [0:0]
:KUBE-IPVS-OUT-FILTER - [0:0]
-A KUBE-SOURCE-RANGES-FIREWALL -j DROP
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x00004000/0x00004000 -j ACCEPT
-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT
-A KUBE-NODE-PORT -m comment --comment "Kubernetes health check node port" -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j ACCEPT
-A KUBE-IPVS-FILTER -m set --match-set KUBE-LOAD-BALANCER dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-EXTERNAL-IP-LOCAL dst,dst -j RETURN
-A KUBE-IPVS-FILTER -m set --match-set KUBE-HEALTH-CHECK-NODE-PORT dst -j RETURN
-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT
-I FORWARD -m comment --comment "kubernetes forwarding rules" -j KUBE-FORWARD
-I INPUT -m comment --comment "kubernetes health check rules" -j KUBE-NODE-PORT
-I INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-I FORWARD -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL
-I INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER
-I OUTPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-OUT-FILTER
COMMIT
`;

Deno.test("renderIpvsPayloads() on an empty node: 17 sets created, no virtual server, no address, upstream's base rules", () => {
  const p = renderIpvsPayloads(state([]));
  const creates = p.ipsetRestore.trim().split("\n");
  assert.equal(creates.length, 17);
  assert.ok(creates.every((l) => l.startsWith("create KUBE-") && l.endsWith(" -exist")));
  assert.ok(creates.includes("create KUBE-NODE-PORT-TCP bitmap:port range 0-65535 -exist"));
  assert.ok(
    creates.includes(
      "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 -exist",
    ),
  );
  assert.equal(p.ipvsadmRestore, "");
  assert.equal(p.addressBatch, "");
  assert.equal(p.iptablesRestore, EMPTY_NODE_IPTABLES);
});

Deno.test("renderIpvsIptablesRules() masquerades ClusterIP traffic by set source without a local detector, off-cluster with one, all with masqueradeAll", () => {
  const s = state([port(svc(), [ep("10.0.1.1")])]);
  const rule = (o: Parameters<typeof computeIpvsDesiredState>[1]) =>
    renderIpvsIptablesRules(computeIpvsDesiredState(s, o)).natRules.find((r) =>
      r.includes("KUBE-CLUSTER-IP") && r.endsWith("-j KUBE-MARK-MASQ")
    );
  assert.match(rule({})!, /--match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ$/);
  assert.match(
    rule({ clusterCIDRs: ["10.0.0.0/8"] })!,
    /KUBE-CLUSTER-IP dst,dst ! -s 10\.0\.0\.0\/8 -j KUBE-MARK-MASQ$/,
  );
  assert.match(
    rule({ masqueradeAll: true, clusterCIDRs: ["10.0.0.0/8"] })!,
    /KUBE-CLUSTER-IP dst,dst -j KUBE-MARK-MASQ$/,
  );
});

Deno.test("renderIpvsIptablesRules() writes set rules only for sets with members, in upstream's order", () => {
  const d = computeIpvsDesiredState(state([
    port(svc({ nodePort: 30080, externalPolicyLocal: true, loadBalancerIPs: ["203.0.114.1"] })),
  ]));
  const nat = renderIpvsIptablesRules(d).natRules;
  const idx = (needle: string) => nat.findIndex((r) => r.includes(needle));
  assert.ok(
    idx("-s 127.0.0.0/8 -j RETURN") < idx("KUBE-LOAD-BALANCER dst,dst -j KUBE-LOAD-BALANCER"),
  );
  assert.ok(
    idx("KUBE-NODE-PORT-LOCAL-TCP dst -j RETURN") < idx("KUBE-NODE-PORT-TCP dst -j KUBE-MARK-MASQ"),
  );
  assert.ok(idx("KUBE-LOAD-BALANCER-LOCAL dst,dst -j RETURN") >= 0);
  assert.equal(idx("KUBE-EXTERNAL-IP"), -1);
  assert.equal(idx("KUBE-NODE-PORT-UDP"), -1);
  assert.ok(idx("KUBE-CLUSTER-IP dst,dst -j ACCEPT") < idx("KUBE-LOAD-BALANCER dst,dst -j ACCEPT"));
});

Deno.test("renderIpvsIptablesRules() spells IPv6 loopback and KUBE-6- set names", () => {
  const d = computeIpvsDesiredState(
    state([port(svc({ clusterIP: "fd00:30::1" }))], { family: "IPv6" }),
  );
  const r = renderIpvsIptablesRules(d);
  assert.equal(r.natRules[0], "-A KUBE-SERVICES -s ::1/128 -j RETURN");
  assert.ok(r.natRules.some((l) => l.includes("--match-set KUBE-6-CLUSTER-IP dst,dst")));
  assert.ok(r.filterRules.some((l) => l.includes("--match-set KUBE-6-IPVS-IPS dst -j REJECT")));
  assert.ok(
    ![...r.natRules, ...r.filterRules].some((l) => /--match-set KUBE-(CLUSTER|IPVS)-/.test(l)),
  );
});

Deno.test("buildIpvsRestoreInput() with missingIpvsJumps() inserts each jump once over repeated syncs", async () => {
  const ipt = createFakeIptables();
  const rules = renderIpvsIptablesRules(computeIpvsDesiredState(state([port(svc())])));
  for (let i = 0; i < 3; i++) {
    const saved = parseIptablesSave(ipt.save("legacy", "IPv4"));
    const input = buildIpvsRestoreInput(rules, missingIpvsJumps(saved));
    const out = await ipt.run({
      cmd: "iptables-legacy-restore",
      args: ["--noflush"],
      stdin: input,
    });
    assert.equal(out.code, 0, out.stderr);
  }
  const input = ipt.table("legacy", "IPv4", "filter").get("INPUT")!.rules;
  assert.deepEqual(input.map((r) => r.split(" -j ")[1]), [
    "KUBE-IPVS-FILTER",
    "KUBE-PROXY-FIREWALL",
    "KUBE-NODE-PORT",
  ]);
  assert.equal(ipt.table("legacy", "IPv4", "nat").get("PREROUTING")!.rules.length, 1);
});

Deno.test("renderIpvsText() prints the four payloads of a family under headings, in apply order", () => {
  const text = renderIpvsText(state([port(svc(), [ep("10.0.1.1")])]));
  const headings = text.split("\n").filter((l) => l.startsWith("# "));
  assert.deepEqual(headings, [
    "# IPv4: ipset restore",
    "# IPv4: ipvsadm -R",
    "# IPv4: ip -batch - (kube-ipvs0 addresses)",
    "# IPv4: iptables-restore --noflush",
  ]);
  assert.ok(
    text.includes("-A -t 172.30.0.41:80 -s rr\n-a -t 172.30.0.41:80 -r 10.0.1.1:80 -m -w 1\n"),
  );
  assert.ok(text.includes("addr add 172.30.0.41/32 dev kube-ipvs0\n"));
  assert.ok(text.includes("add KUBE-IPVS-IPS 172.30.0.41 -exist\n"));
});
