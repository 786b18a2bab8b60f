import assert from "node:assert/strict";
import { renderFullRestore } from "../../../lib/backends/iptables/restore_payload.ts";
import {
  servicePortEndpointChain,
  servicePortPolicyClusterChain,
} from "../../../lib/backends/iptables/chain_names.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

const OPTS = { clusterCIDRs: ["10.0.0.0/8"] };

/** The -A rules of one chain in one table of a restore payload. */
function rules(payload: string, table: string, chain: string): string[] {
  const lines = payload.split("\n").map((l) => l.trim());
  const start = lines.indexOf(`*${table}`);
  assert.notEqual(start, -1, `no *${table} in payload`);
  return lines.slice(start + 1, lines.indexOf("COMMIT", start))
    .filter((l) => l.startsWith(`-A ${chain} `));
}

Deno.test("renderIptables() matches SCTP with -m sctp -p sctp in every service rule, beside TCP on the same port", () => {
  const tcp = svc({ portName: "tcp", nodePort: 30080 });
  const sctp = svc({ portName: "sctp", protocol: "SCTP", nodePort: 30080 });
  const out = renderFullRestore(
    state([sps(tcp, [ep("10.180.0.1")]), sps(sctp, [ep("10.180.0.2")])]),
    OPTS,
  );
  const svcTcp = servicePortPolicyClusterChain("ns1/svc1:tcp", "tcp");
  const svcSctp = servicePortPolicyClusterChain("ns1/svc1:sctp", "sctp");
  const sepSctp = servicePortEndpointChain("ns1/svc1:sctp", "sctp", "10.180.0.2:80");
  assert.notEqual(svcTcp, svcSctp);
  assert.deepEqual(rules(out, "nat", "KUBE-SERVICES").slice(0, 2).sort(), [
    `-A KUBE-SERVICES -m comment --comment "ns1/svc1:sctp cluster IP" -m sctp -p sctp -d 172.30.0.41 --dport 80 -j ${svcSctp}`,
    `-A KUBE-SERVICES -m comment --comment "ns1/svc1:tcp cluster IP" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j ${svcTcp}`,
  ]);
  assert.deepEqual(rules(out, "nat", "KUBE-NODEPORTS").sort(), [
    `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:sctp -m sctp -p sctp --dport 30080 -j ${
      svcSctp.replace("KUBE-SVC-", "KUBE-EXT-")
    }`,
    `-A KUBE-NODEPORTS -m comment --comment ns1/svc1:tcp -m tcp -p tcp --dport 30080 -j ${
      svcTcp.replace("KUBE-SVC-", "KUBE-EXT-")
    }`,
  ]);
  assert.deepEqual(rules(out, "nat", sepSctp), [
    `-A ${sepSctp} -m comment --comment ns1/svc1:sctp -s 10.180.0.2 -j KUBE-MARK-MASQ`,
    `-A ${sepSctp} -m comment --comment ns1/svc1:sctp -m sctp -p sctp -j DNAT --to-destination 10.180.0.2:80`,
  ]);
});

Deno.test("renderIptables() rejects an SCTP service port without endpoints with -m sctp -p sctp", () => {
  const sctp = svc({ portName: "sctp", protocol: "SCTP", port: 9999 });
  const out = renderFullRestore(state([sps(sctp)]), OPTS);
  assert.deepEqual(rules(out, "filter", "KUBE-SERVICES"), [
    '-A KUBE-SERVICES -m comment --comment "ns1/svc1:sctp has no endpoints" -m sctp -p sctp -d 172.30.0.41 --dport 9999 -j REJECT',
  ]);
});
