/**
 * --iptables-masquerade-bit with real packets: with bit 5 (mark 0x20) instead of the default 14,
 * external NodePort traffic and hairpin traffic are still masqueraded, pod traffic is not, and
 * the kernel holds no rule with the default mark. Needs root; fails loudly without it.
 * IP plan: node 192.168.0.2 (node1), local pods 10.0.1.2 / 10.0.3.2, services 172.30.0.0/16,
 * external client 203.0.113.2.
 */
import assert from "node:assert/strict";
import { TOPOLOGY_IPS } from "../../scripts/netns/mod.ts";
import { list, node1 } from "./support/cluster_objects.ts";
import { checkFlows } from "./support/flow_check.ts";
import { type FlowPort, flowService, flowSlice, local } from "./support/flow_objects.ts";
import { withProxy } from "./support/with_proxy.ts";

const POD_A = "10.0.1.2", CLIENT = "10.0.3.2";
const TARGET = 8080;
const NP: FlowPort = { name: "http", port: 80, targetPort: TARGET, nodePort: 30170 };

Deno.test("e2e: --iptables-masquerade-bit=5 still masquerades external and hairpin traffic", async () => {
  await withProxy({
    prefix: "la9",
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "client", ip: CLIENT }],
    state: list([
      node1(),
      flowService("demo", "np", "172.30.0.70", [NP], { type: "NodePort" }),
      flowSlice("demo", "np", "np-1", [local(POD_A)], [NP]),
    ]),
    echo: { tcp: [TARGET], udp: [] },
    args: ["--iptables-masquerade-bit=5"],
  }, async ({ topo }) => {
    const saved: string[] = [];
    for (const table of ["nat", "filter"]) {
      const out = await topo.exec("node", "iptables-legacy-save", ["-t", table]);
      assert.equal(out.code, 0, out.stderr);
      saved.push(out.stdout);
    }
    const rules = saved.join("").split("\n").filter((l) => l.startsWith("-A KUBE-"));
    // iptables-save prints the marks in its own short form.
    assert.ok(rules.includes("-A KUBE-MARK-MASQ -j MARK --set-xmark 0x20/0x20"), rules.join("\n"));
    assert.ok(
      rules.includes("-A KUBE-POSTROUTING -m mark ! --mark 0x20/0x20 -j RETURN"),
      rules.join("\n"),
    );
    assert.ok(
      rules.some((l) => l.startsWith("-A KUBE-FORWARD ") && l.includes("--mark 0x20/0x20")),
      rules.join("\n"),
    );
    assert.deepEqual(rules.filter((l) => l.includes("0x4000")), []);
    await checkFlows(topo, [
      {
        name: "external -> NodePort is masqueraded",
        from: "external",
        to: `${TOPOLOGY_IPS.node}:30170`,
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "an endpoint calling its own service (hairpin) is masqueraded",
        from: "pod-a",
        to: "172.30.0.70:80",
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "another pod -> clusterIP keeps its source",
        from: "client",
        to: "172.30.0.70:80",
        expect: ["pod-a"],
        masq: false,
      },
    ]);
  });
});
