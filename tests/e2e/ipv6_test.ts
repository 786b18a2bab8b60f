/**
 * Dual-stack with real packets: the program runs one iptables proxier per family, so one
 * dual-stack Service is reachable on its IPv4 and its IPv6 cluster IP at the same time, and the
 * IPv6 rules (ip6tables) do what the IPv4 ones do: spread unmasqueraded, masquerade hairpin,
 * reject a service without endpoints at once, masquerade external NodePort traffic.
 * IP plan: node 192.168.0.2 / fd00:192::2 (node1), local pods 10.0.1.2 / 10.0.2.2 / 10.0.3.2
 * with IPv6 fd00:10::1:2 / fd00:10::2:2 / fd00:10::3:2, services 172.30.0.0/16 and
 * fd00:30::/108, external client 203.0.113.2 / fd00:203::2.
 */
import assert from "node:assert/strict";
import { TOPOLOGY_IPS } from "../../scripts/netns/mod.ts";
import { checkFlows, peerHost } from "./support/flow_check.ts";
import { A, B, dualStackCluster, TARGET } from "./support/dual_stack_cluster.ts";
import { eventually } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

const NODE6 = TOPOLOGY_IPS.node6;

Deno.test("e2e: IPv6 clusterIP, hairpin, REJECT and NodePort work beside the IPv4 side of the same dual-stack service", async () => {
  await withProxy({
    prefix: "sx1",
    pods: [{ name: "pod-a", ip: A.v4 }, { name: "pod-b", ip: B.v4 }, {
      name: "client",
      ip: "10.0.3.2",
    }],
    state: dualStackCluster(A),
    args: ["--cluster-cidr=10.0.0.0/8,fd00:10::/64"],
    echo: { tcp: [TARGET], udp: [TARGET] },
  }, async ({ topo, dir, proxy }) => {
    assert.match(proxy.output(), /Using iptables proxy.*IPv6/);
    await checkFlows(topo, [
      {
        name: "pod -> IPv6 clusterIP TCP",
        from: "client",
        to: "[fd00:30::50]:80",
        expect: ["pod-a", "pod-b"],
        masq: false,
      },
      {
        name: "pod -> IPv6 clusterIP UDP",
        from: "client",
        proto: "udp",
        to: "[fd00:30::50]:80",
        expect: ["pod-a", "pod-b"],
        masq: false,
      },
      {
        name: "pod -> IPv4 clusterIP of the same service TCP",
        from: "client",
        to: "172.30.0.50:80",
        expect: ["pod-a", "pod-b"],
        masq: false,
      },
      {
        name: "pod -> IPv4 clusterIP of the same service UDP",
        from: "client",
        proto: "udp",
        to: "172.30.0.50:80",
        expect: ["pod-a", "pod-b"],
        masq: false,
      },
      {
        name: "hairpin pod-a -> IPv6 clusterIP -> pod-a",
        from: "pod-a",
        to: "[fd00:30::51]:80",
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "pod -> IPv6 clusterIP without endpoints",
        from: "client",
        to: "[fd00:30::52]:80",
        expect: "refused",
      },
      {
        name: "pod -> IPv6 clusterIP without endpoints UDP",
        from: "client",
        proto: "udp",
        to: "[fd00:30::52]:80",
        expect: "refused",
      },
      {
        name: "external -> IPv6 NodePort TCP",
        from: "external",
        to: `[${NODE6}]:30150`,
        expect: ["pod-a", "pod-b"],
        masq: true,
      },
      {
        name: "external -> IPv6 NodePort UDP",
        from: "external",
        proto: "udp",
        to: `[${NODE6}]:30150`,
        expect: ["pod-a", "pod-b"],
        masq: true,
      },
      {
        name: "external -> IPv4 NodePort TCP",
        from: "external",
        to: `${TOPOLOGY_IPS.node}:30150`,
        expect: ["pod-a", "pod-b"],
        masq: true,
      },
    ]);
    // Masqueraded IPv6 traffic leaves with the node's IPv6 address.
    const ext = await topo.probe({ from: "external", proto: "tcp", to: `[${NODE6}]:30150` });
    assert.equal(ext[0]?.ok ? peerHost(ext[0].peer) : JSON.stringify(ext), NODE6);
    // The IPv6 rules live in ip6tables, the IPv4 ones in iptables, each with only its family.
    const save6 = await topo.exec("node", "ip6tables-legacy-save", ["-t", "nat"]);
    assert.match(save6.stdout, /-d fd00:30::50\/128 .*--dport 80 -j KUBE-SVC-/);
    assert.doesNotMatch(save6.stdout, /172\.30\.0\.50/);
    const save4 = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
    assert.match(save4.stdout, /-d 172\.30\.0\.50\/32 .*--dport 80 -j KUBE-SVC-/);
    assert.doesNotMatch(save4.stdout, /fd00:30::/);

    // IPv6 conntrack: a UDP client keeping its source port follows the endpoint change.
    const dns = () =>
      topo.probe({
        from: "client",
        proto: "udp",
        to: "[fd00:30::53]:53",
        count: 2,
        sourcePort: 40053,
      });
    assert.deepEqual((await dns()).map((a) => a.ok && a.name), ["pod-a", "pod-a"]);
    await dir.write("cluster.json", dualStackCluster(B));
    await eventually("the IPv6 UDP flow to reach pod-b", 5000, async () => {
      return (await dns()).every((a) => a.ok && a.name === "pod-b");
    });
    assert.match(topo.logs(), /Deleted stale conntrack entries.*IPv6/);
  });
});
