import assert from "node:assert/strict";
import { masqueradeMarkText } from "../../../lib/backends/common/mod.ts";
import { renderFullRestore } from "../../../lib/backends/iptables/restore_payload.ts";
import { probability } from "../../../lib/backends/iptables/_render_endpoints.ts";
import { renderIptables } from "../../../lib/backends/iptables/render.ts";
import type { IptablesRenderOptions } from "../../../lib/backends/iptables/render_options.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

const SVC1 = "KUBE-SVC-XPGD46QRK7WJZT7O";
const SEP1 = "KUBE-SEP-SXIVWICOYRO3J4NJ";
const OPTS: IptablesRenderOptions = { clusterCIDRs: ["10.0.0.0/8", "fd00:10::/64"] };

/** The restore lines of one table, with blank runs of spaces collapsed. */
function tableLines(payload: string, table: string): string[] {
  const lines = payload.split("\n").map((l) => l.trim().replace(/\s+/g, " "));
  const start = lines.indexOf(`*${table}`);
  assert.notEqual(start, -1, `no *${table} in payload`);
  return lines.slice(start + 1, lines.indexOf("COMMIT", start));
}

/** The -A rules of one chain in one table. */
function rules(payload: string, table: string, chain: string): string[] {
  return tableLines(payload, table).filter((l) => l.startsWith(`-A ${chain} `));
}

function render(s: ProxyState, o: IptablesRenderOptions = OPTS): string {
  return renderFullRestore(s, o);
}

Deno.test("renderIptables() writes upstream's ClusterIP rules for one endpoint", () => {
  const out = render(state([sps(svc(), [ep("10.180.0.1")])]));
  assert.deepEqual(rules(out, "nat", "KUBE-SERVICES"), [
    `-A KUBE-SERVICES -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j ${SVC1}`,
    `-A KUBE-SERVICES -m comment --comment "kubernetes service nodeports; NOTE: this must be the last rule in this chain" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS`,
  ]);
  assert.deepEqual(rules(out, "nat", SVC1), [
    `-A ${SVC1} -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ`,
    `-A ${SVC1} -m comment --comment "ns1/svc1:p80 -> 10.180.0.1:80" -j ${SEP1}`,
  ]);
  assert.deepEqual(rules(out, "nat", SEP1), [
    `-A ${SEP1} -m comment --comment ns1/svc1:p80 -s 10.180.0.1 -j KUBE-MARK-MASQ`,
    `-A ${SEP1} -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80`,
  ]);
  assert.deepEqual(rules(out, "filter", "KUBE-SERVICES"), []);
});

Deno.test("renderIptables() writes the fixed postrouting, mark and forward rules", () => {
  const out = render(state([]));
  assert.deepEqual(rules(out, "nat", "KUBE-POSTROUTING"), [
    "-A KUBE-POSTROUTING -m mark ! --mark 0x00004000/0x00004000 -j RETURN",
    "-A KUBE-POSTROUTING -j MARK --xor-mark 0x00004000",
    '-A KUBE-POSTROUTING -m comment --comment "kubernetes service traffic requiring SNAT" -j MASQUERADE --random-fully',
  ]);
  assert.deepEqual(rules(out, "nat", "KUBE-MARK-MASQ"), [
    "-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000",
  ]);
  assert.deepEqual(rules(out, "filter", "KUBE-FORWARD"), [
    "-A KUBE-FORWARD -m conntrack --ctstate INVALID -j DROP",
    '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x00004000/0x00004000 -j ACCEPT',
    '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding conntrack rule" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT',
  ]);
  for (const table of ["mangle", "nat", "filter"]) {
    assert.ok(tableLines(out, table).includes(":KUBE-PROXY-CANARY - [0:0]"), table);
  }
  assert.ok(
    tableLines(out, "nat").includes(
      '-I PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    ),
  );
  assert.ok(
    tableLines(out, "nat").includes(
      '-I POSTROUTING -m comment --comment "kubernetes postrouting rules" -j KUBE-POSTROUTING',
    ),
  );
  assert.ok(
    tableLines(out, "filter").includes(
      '-I FORWARD -m conntrack --ctstate NEW -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
    ),
  );
});

Deno.test("renderIptables() rejects services without endpoints in the filter table", () => {
  const out = render(state([sps(svc({ protocol: "UDP", port: 53, portName: "dns" }))]));
  assert.deepEqual(rules(out, "filter", "KUBE-SERVICES"), [
    '-A KUBE-SERVICES -m comment --comment "ns1/svc1:dns has no endpoints" -m udp -p udp -d 172.30.0.41 --dport 53 -j REJECT',
  ]);
  assert.ok(!tableLines(out, "nat").some((l) => l.includes("KUBE-SVC-")));
});

Deno.test("renderIptables() masquerades hairpin traffic in every endpoint chain", () => {
  const rs = renderIptables(state([sps(svc(), [ep("10.180.0.1"), ep("10.180.0.2")])]), OPTS);
  const hairpins = rs.natRules.map((l) => l.text).filter((t) =>
    /^-A KUBE-SEP-\S+ .* -s 10\.180\.0\.\d -j KUBE-MARK-MASQ$/.test(t)
  );
  assert.equal(hairpins.length, 2);
});

Deno.test("renderIptables() masquerades off-cluster traffic, all traffic, or none", () => {
  const s = state([sps(svc(), [ep("10.180.0.1")])]);
  const masq = (o: IptablesRenderOptions) =>
    rules(render(s, o), "nat", SVC1).filter((l) => l.endsWith("-j KUBE-MARK-MASQ"));
  assert.deepEqual(masq({ clusterCIDRs: ["fd00:10::/64", "10.0.0.0/8", "11.0.0.0/8"] }), [
    `-A ${SVC1} -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ`,
  ]);
  assert.deepEqual(masq({ masqueradeAll: true, clusterCIDRs: ["10.0.0.0/8"] }), [
    `-A ${SVC1} -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-MARK-MASQ`,
  ]);
  assert.deepEqual(masq({}), []);
});

Deno.test("renderIptables() adds session affinity before the random rules", () => {
  const out = render(
    state([sps(svc({ stickyMaxAgeSeconds: 10800 }), [ep("10.180.0.1"), ep("10.180.0.2")])]),
  );
  const svcRules = rules(out, "nat", SVC1);
  assert.match(
    svcRules[1]!,
    new RegExp(`-m recent --name ${SEP1} --rcheck --seconds 10800 --reap -j ${SEP1}$`),
  );
  assert.match(svcRules[2]!, /-m recent --name KUBE-SEP-\S+ --rcheck --seconds 10800 --reap/);
  assert.match(svcRules[3]!, /--probability 0\.5000000000 -j /);
  assert.match(
    rules(out, "nat", SEP1)[1]!,
    new RegExp(`-m recent --name ${SEP1} --set -m tcp -p tcp -j DNAT`),
  );
});

Deno.test("probability() formats 1/n with ten decimals and the last endpoint is unconditional", () => {
  assert.equal(probability(3), "0.3333333333");
  assert.equal(probability(2), "0.5000000000");
  assert.equal(probability(7), "0.1428571429");
  const eps = [1, 2, 3, 4].map((i) => ep(`10.180.0.${i}`));
  const svcRules = rules(render(state([sps(svc(), eps)])), "nat", SVC1).slice(1);
  assert.deepEqual(
    svcRules.map((r) => /--probability (\S+)/.exec(r)?.[1] ?? "always"),
    ["0.2500000000", "0.3333333333", "0.5000000000", "always"],
  );
});

Deno.test("renderIptables() drops endpoint comments above 1000 endpoints", () => {
  const out = render(state([sps(svc(), [ep("10.180.0.1")])], { totalEndpoints: 1001 }));
  assert.deepEqual(rules(out, "nat", SVC1).slice(1), [`-A ${SVC1} -j ${SEP1}`]);
  assert.deepEqual(rules(out, "nat", SEP1), [
    `-A ${SEP1} -s 10.180.0.1 -j KUBE-MARK-MASQ`,
    `-A ${SEP1} -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80`,
  ]);
  assert.match(rules(out, "nat", "KUBE-SERVICES")[0]!, /--comment "ns1\/svc1:p80 cluster IP"/);
});

Deno.test("renderIptables() renders IPv6 with brackets, ::1 excluded from NodePorts", () => {
  const s = state(
    [
      sps(svc({ clusterIP: "fd00:30::41" }), [ep("fd00:10::1")]),
      sps(svc({ name: "svc2", clusterIP: "fd00:30::42" })),
    ],
    { family: "IPv6" },
  );
  const out = render(s);
  const sep = tableLines(out, "nat").filter((l) => l.startsWith("-A KUBE-SEP-"));
  assert.match(sep[0]!, /-s fd00:10::1 -j KUBE-MARK-MASQ$/);
  assert.match(sep[1]!, /--to-destination \[fd00:10::1\]:80$/);
  assert.match(
    rules(out, "nat", SVC1)[0]!,
    /-d fd00:30::41 --dport 80 ! -s fd00:10::\/64 -j KUBE-MARK-MASQ$/,
  );
  assert.match(
    rules(out, "nat", "KUBE-SERVICES").at(-1)!,
    /--dst-type LOCAL ! -d ::1\/128 -j KUBE-NODEPORTS$/,
  );
  assert.match(rules(out, "filter", "KUBE-SERVICES")[0]!, /-d fd00:30::42 --dport 80 -j REJECT$/);
  assert.deepEqual(rules(out, "filter", "KUBE-FIREWALL"), []);
});

Deno.test("renderIptables() sends ETP Local external traffic through KUBE-EXT to KUBE-SVL", () => {
  const info = svc({ nodePort: 30080, externalPolicyLocal: true, healthCheckNodePort: 30000 });
  const out = render(
    state([sps(info, [ep("10.180.0.1", 80, { isLocal: true }), ep("10.180.0.2")])]),
  );
  const ext = "KUBE-EXT-XPGD46QRK7WJZT7O";
  assert.deepEqual(rules(out, "nat", "KUBE-NODEPORTS"), [
    `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:p80 -m tcp -p tcp --dport 30080 -j ${ext}`,
  ]);
  assert.deepEqual(rules(out, "nat", ext), [
    `-A ${ext} -m comment --comment "pod traffic for ns1/svc1:p80 external destinations" -s 10.0.0.0/8 -j ${SVC1}`,
    `-A ${ext} -m comment --comment "masquerade LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j KUBE-MARK-MASQ`,
    `-A ${ext} -m comment --comment "route LOCAL traffic for ns1/svc1:p80 external destinations" -m addrtype --src-type LOCAL -j ${SVC1}`,
    `-A ${ext} -j KUBE-SVL-XPGD46QRK7WJZT7O`,
  ]);
  assert.deepEqual(rules(out, "filter", "KUBE-NODEPORTS"), [
    '-A KUBE-NODEPORTS -m comment --comment "ns1/svc1:p80 health check node port" -m tcp -p tcp --dport 30000 -j ACCEPT',
  ]);
});

Deno.test("renderIptables() drops LB traffic outside loadBalancerSourceRanges via KUBE-FW", () => {
  const info = svc({
    loadBalancerIPs: ["192.0.2.10"],
    loadBalancerSourceRanges: ["203.0.113.0/24"],
  });
  const out = render(state([sps(info, [ep("10.180.0.1")])]));
  const fw = "KUBE-FW-XPGD46QRK7WJZT7O";
  assert.deepEqual(rules(out, "nat", fw), [
    `-A ${fw} -m comment --comment "ns1/svc1:p80 loadbalancer IP" -s 203.0.113.0/24 -j KUBE-EXT-XPGD46QRK7WJZT7O`,
    `-A ${fw} -m comment --comment "other traffic to ns1/svc1:p80 will be dropped by KUBE-PROXY-FIREWALL"`,
  ]);
  assert.deepEqual(rules(out, "filter", "KUBE-PROXY-FIREWALL"), [
    `-A KUBE-PROXY-FIREWALL -m comment --comment "ns1/svc1:p80 traffic not accepted by ${fw}" -m tcp -p tcp -d 192.0.2.10 --dport 80 -j DROP`,
  ]);
});

Deno.test("renderIptables() binds NodePorts to the addresses nodePortAddresses selects", () => {
  const s = state([sps(svc({ nodePort: 30080 }), [ep("10.180.0.1")])]);
  const tail = (o: IptablesRenderOptions) => rules(render(s, o), "nat", "KUBE-SERVICES").slice(1);
  assert.match(
    tail({ nodePortAddresses: ["primary"] })[0]!,
    / -d 192\.168\.0\.2 -j KUBE-NODEPORTS$/,
  );
  assert.equal(tail({ nodePortAddresses: ["192.168.0.0/24", "127.0.0.0/8"] }).length, 2);
  assert.match(
    tail({ localhostNodePorts: false })[0]!,
    /--dst-type LOCAL ! -d 127\.0\.0\.0\/8 -j KUBE-NODEPORTS$/,
  );
});

Deno.test("renderIptables() skips a service port whose values cannot be trusted", () => {
  const bad = sps(svc({ name: "svc2", clusterIP: "172.30.0.42 -j ACCEPT" }), [ep("10.180.0.2")]);
  const rs = renderIptables(state([sps(svc(), [ep("10.180.0.1")]), bad]), OPTS);
  assert.equal(rs.skipped.length, 1);
  assert.match(rs.skipped[0]!.reason, /bad cluster IP/);
  assert.ok(!rs.natRules.some((l) => l.text.includes("ACCEPT")));
});

Deno.test("masqueradeMarkText() formats like Go's %#08x and rejects bad bits", () => {
  assert.equal(masqueradeMarkText(14), "0x00004000");
  assert.equal(masqueradeMarkText(31), "0x80000000");
  assert.throws(() => masqueradeMarkText(32), /Invalid masqueradeBit "32"/);
});

Deno.test("renderIptables() counts -A rules per table", () => {
  const rs = renderIptables(state([sps(svc(), [ep("10.180.0.1")])]), OPTS);
  // postrouting 3 + mark 1 + services 2 + svc 2 + sep 2
  assert.deepEqual(rs.ruleCounts, { nat: 10, filter: 4 });
});
