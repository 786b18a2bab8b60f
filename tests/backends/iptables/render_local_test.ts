/**
 * What --detect-local-mode, --iptables-masquerade-bit and healthCheckNodePort change in the
 * rendered rules (the rest of the layout is in render_test.ts).
 */
import assert from "node:assert/strict";
import { type IptablesRenderOptions } from "../../../lib/backends/iptables/render_options.ts";
import { renderFullRestore } from "../../../lib/backends/iptables/restore_payload.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

const SVC1 = "KUBE-SVC-XPGD46QRK7WJZT7O";
const EXT1 = "KUBE-EXT-XPGD46QRK7WJZT7O";
const CLUSTER_IP_RULE =
  `-A ${SVC1} -m comment --comment "ns1/svc1:p80 cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80`;

/** The -A rules of one chain in one table of a full restore payload. */
function rules(payload: string, table: string, chain: string): string[] {
  const lines = payload.split("\n").map((l) => l.trim().replace(/\s+/g, " "));
  const start = lines.indexOf(`*${table}`);
  assert.notEqual(start, -1, `no *${table} in payload`);
  return lines.slice(start + 1, lines.indexOf("COMMIT", start))
    .filter((l) => l.startsWith(`-A ${chain} `));
}

/** An ETP Local NodePort service with one local endpoint, and a podCIDR on the node. */
function etpLocalState(podCIDRs: readonly string[] = ["10.0.1.0/24"]): ProxyState {
  const info = svc({ nodePort: 30080, externalPolicyLocal: true });
  const s = state([sps(info, [ep("10.0.1.2", 80, { isLocal: true })])]);
  return { ...s, node: { ...s.node, podCIDRs } };
}

/** The SVC masquerade rule and the EXT chain's pod-traffic rule, for the given options. */
function localityRules(o: IptablesRenderOptions, s = etpLocalState()) {
  const out = renderFullRestore(s, { clusterCIDRs: ["10.0.0.0/8"], ...o });
  return {
    masq: rules(out, "nat", SVC1).filter((l) => l.endsWith("-j KUBE-MARK-MASQ")),
    pod: rules(out, "nat", EXT1).filter((l) => l.includes("pod traffic")),
  };
}

const podRule = (match: string) =>
  `-A ${EXT1} -m comment --comment "pod traffic for ns1/svc1:p80 external destinations" ${match} -j ${SVC1}`;

Deno.test("renderIptables() detect-local ClusterCIDR (the default) matches the cluster CIDR", () => {
  for (const o of [{}, { detectLocalMode: "ClusterCIDR" as const }]) {
    assert.deepEqual(localityRules(o), {
      masq: [`${CLUSTER_IP_RULE} ! -s 10.0.0.0/8 -j KUBE-MARK-MASQ`],
      pod: [podRule("-s 10.0.0.0/8")],
    });
  }
});

Deno.test("renderIptables() detect-local NodeCIDR matches the node's podCIDR, nothing without one", () => {
  assert.deepEqual(localityRules({ detectLocalMode: "NodeCIDR" }), {
    masq: [`${CLUSTER_IP_RULE} ! -s 10.0.1.0/24 -j KUBE-MARK-MASQ`],
    pod: [podRule("-s 10.0.1.0/24")],
  });
  assert.deepEqual(localityRules({ detectLocalMode: "NodeCIDR" }, etpLocalState([])), {
    masq: [],
    pod: [],
  });
  // masqueradeAll does not depend on the detector.
  assert.deepEqual(
    localityRules({ detectLocalMode: "NodeCIDR", masqueradeAll: true }, etpLocalState([])).masq,
    [`${CLUSTER_IP_RULE} -j KUBE-MARK-MASQ`],
  );
});

Deno.test("renderIptables() detect-local BridgeInterface matches the bridge as input interface", () => {
  assert.deepEqual(localityRules({ detectLocalMode: "BridgeInterface", bridgeInterface: "cbr0" }), {
    masq: [`${CLUSTER_IP_RULE} ! -i cbr0 -j KUBE-MARK-MASQ`],
    pod: [podRule("-i cbr0")],
  });
});

Deno.test("renderIptables() detect-local InterfaceNamePrefix matches prefix+ as input interface", () => {
  assert.deepEqual(
    localityRules({ detectLocalMode: "InterfaceNamePrefix", interfaceNamePrefix: "veth" }),
    { masq: [`${CLUSTER_IP_RULE} ! -i veth+ -j KUBE-MARK-MASQ`], pod: [podRule("-i veth+")] },
  );
});

Deno.test("renderIptables() uses --iptables-masquerade-bit for the mark, the SNAT check and forwarding", () => {
  const out = renderFullRestore(state([sps(svc(), [ep("10.180.0.1")])]), { masqueradeBit: 5 });
  assert.deepEqual(rules(out, "nat", "KUBE-MARK-MASQ"), [
    "-A KUBE-MARK-MASQ -j MARK --or-mark 0x00000020",
  ]);
  assert.deepEqual(rules(out, "nat", "KUBE-POSTROUTING").slice(0, 2), [
    "-A KUBE-POSTROUTING -m mark ! --mark 0x00000020/0x00000020 -j RETURN",
    "-A KUBE-POSTROUTING -j MARK --xor-mark 0x00000020",
  ]);
  assert.ok(
    rules(out, "filter", "KUBE-FORWARD").includes(
      '-A KUBE-FORWARD -m comment --comment "kubernetes forwarding rules" -m mark --mark 0x00000020/0x00000020 -j ACCEPT',
    ),
  );
  assert.ok(!out.includes("0x00004000"), "the default mark must not appear anywhere");
});

Deno.test("renderIptables() accepts the health check node port even without endpoints", () => {
  const info = svc({ nodePort: 30080, externalPolicyLocal: true, healthCheckNodePort: 30000 });
  const out = renderFullRestore(state([sps(info, [])]), {});
  assert.deepEqual(rules(out, "filter", "KUBE-NODEPORTS"), [
    '-A KUBE-NODEPORTS -m comment --comment "ns1/svc1:p80 health check node port" -m tcp -p tcp --dport 30000 -j ACCEPT',
  ]);
});
