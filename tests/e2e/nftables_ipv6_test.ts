/**
 * Dual-stack in nftables mode with real packets: the program writes `table ip kube-proxy` and
 * `table ip6 kube-proxy`, so one dual-stack Service answers on its IPv4 and its IPv6 cluster IP,
 * and the IPv6 side does what the IPv4 side does: spreads unmasqueraded, masquerades hairpin,
 * sends a service without endpoints and an unused ClusterIP port to REJECT, serves the NodePort
 * on the node's primary IPv6 address (masqueraded), and follows an IPv6 UDP endpoint change.
 * This kernel (6.18) delivers no ICMPv6 error from a `reject` (nor from ip6tables' REJECT:
 * tests/e2e/ipv6_test.ts fails the same way here), so the IPv6 REJECT cases are proven by a
 * counter the test puts in front of the reject, which the real packet must hit.
 * Needs root and nft; fails loudly without them. IP plan: tests/e2e/support/dual_stack_cluster.ts.
 */
import assert from "node:assert/strict";
import { TOPOLOGY_IPS } from "../../scripts/netns/mod.ts";
import { A, B, dualStackCluster, TARGET } from "./support/dual_stack_cluster.ts";
import { checkFlows, peerHost } from "./support/flow_check.ts";
import { eventually } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

const NODE6 = TOPOLOGY_IPS.node6;

Deno.test("e2e [nftables]: IPv6 clusterIP, hairpin, REJECT and NodePort beside the IPv4 side of one dual-stack service", async () => {
  await withProxy({
    prefix: "nf6",
    requireCommands: ["nft"],
    pods: [{ name: "pod-a", ip: A.v4 }, { name: "pod-b", ip: B.v4 }, {
      name: "client",
      ip: "10.0.3.2",
    }],
    state: dualStackCluster(A),
    args: ["--proxy-mode=nftables", "--cluster-cidr=10.0.0.0/8,fd00:10::/64"],
    echo: { tcp: [TARGET], udp: [TARGET] },
  }, async ({ topo, dir, proxy }) => {
    assert.match(proxy.output(), /Using nftables proxy/);
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
        name: "hairpin pod-a -> IPv6 clusterIP -> pod-a",
        from: "pod-a",
        to: "[fd00:30::51]:80",
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "external -> IPv6 NodePort TCP (primary node IPv6)",
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
    // No endpoints, and an unused port of a ClusterIP: the packet is steered to the reject.
    for (
      const [ip, port, chain] of [
        ["fd00:30::52", 80, "reject-chain"],
        ["fd00:30::50", 81, "cluster-ips-check"],
      ] as const
    ) {
      const counted = await topo.exec("node", "nft", [
        "insert",
        "rule",
        "ip6",
        "kube-proxy",
        chain,
        ...["ip6", "daddr", ip, "tcp", "dport", String(port), "counter"],
        "comment",
        '"test"',
      ]);
      assert.equal(counted.code, 0, counted.stderr);
      const to = `[${ip}]:${port}`;
      const answers = await topo.probe({ from: "client", proto: "tcp", to, timeoutMs: 500 });
      assert.ok(answers.every((a) => !a.ok), `nothing answers ${to}: ${JSON.stringify(answers)}`);
      const listed = await topo.exec("node", "nft", ["list", "chain", "ip6", "kube-proxy", chain]);
      const hits = Number(/counter packets (\d+)[^\n]*"test"/.exec(listed.stdout)?.[1] ?? 0);
      assert.ok(hits >= 1, `${to} reached ${chain}:\n${listed.stdout}`);
      assert.match(listed.stdout, /\breject\b/);
    }
    const ext = await topo.probe({ from: "external", proto: "tcp", to: `[${NODE6}]:30150` });
    assert.equal(ext[0]?.ok ? peerHost(ext[0].peer) : JSON.stringify(ext), NODE6);
    // Each family's table holds only its own addresses.
    const t6 = await topo.exec("node", "nft", ["list", "table", "ip6", "kube-proxy"]);
    assert.equal(t6.code, 0, t6.stderr);
    assert.match(t6.stdout, /fd00:30::50 \. tcp \. 80/);
    assert.doesNotMatch(t6.stdout, /172\.30\.0\.50/);
    const t4 = await topo.exec("node", "nft", ["list", "table", "ip", "kube-proxy"]);
    assert.match(t4.stdout, /172\.30\.0\.50 \. tcp \. 80/);
    assert.doesNotMatch(t4.stdout, /fd00:30::/);

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
  });
});
