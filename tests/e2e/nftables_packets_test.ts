/**
 * Real packets through the nftables layout, without the program: the proxier programs the
 * node namespace (runner via `ip netns exec`), and probes go from pods and the external client.
 * Checks the shared-chain dispatch (ClusterIP, NodePort), masquerade (external and hairpin),
 * ETP Local (no masquerade, local endpoints only), ClientIP affinity, REJECT without endpoints
 * and for unused ClusterIP ports. Needs root and nft; fails loudly without them.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16, client 203.0.113.2.
 */
import assert from "node:assert/strict";
import { createNftablesProxier } from "../../lib/backends/nftables/proxier.ts";
import { createTopology, type ProbeAnswer, requireCommands } from "../../scripts/netns/mod.ts";
import { ep, sps, state, svc } from "../backends/iptables/state_fixtures.ts";
import { topologyRunner } from "./support/node_runner.ts";

const POD_A = "10.0.1.2", POD_B = "10.0.2.2", CLIENT = "10.0.3.2", REMOTE = "10.1.0.2";
const NODE = "192.168.0.2", EXTERNAL = "203.0.113.2";

function names(answers: ProbeAnswer[]): string[] {
  return [...new Set(answers.map((a) => (a.ok ? a.name : `error:${a.error}`)))].sort();
}

function peers(answers: ProbeAnswer[]): string[] {
  return [...new Set(answers.map((a) => (a.ok ? a.peer.split(":")[0]! : "-")))].sort();
}

Deno.test("e2e nftables layout: real packets through shared chains", async () => {
  requireCommands(["ip", "nft"]);
  const topo = await createTopology({
    prefix: "knlpkt",
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }, {
      name: "client",
      ip: CLIENT,
    }],
    remotePods: [{ name: "pod-r", ip: REMOTE }],
  });
  try {
    await topo.startEchoServers();
    const runner = topologyRunner(topo);
    const proxier = createNftablesProxier({ family: "IPv4", runner, clusterCIDRs: ["10.0.0.0/8"] });
    const local = { isLocal: true };
    const s = state([
      sps(svc({ name: "web", clusterIP: "172.30.0.10", nodePort: 30080 }), [
        ep(POD_A, 8080, local),
        ep(POD_B, 8080, local),
        ep(REMOTE, 8080),
      ]),
      sps(
        svc({ name: "loc", clusterIP: "172.30.0.11", nodePort: 30081, externalPolicyLocal: true }),
        [ep(POD_A, 8080, local), ep(REMOTE, 8080)],
      ),
      sps(
        svc({ name: "sticky", clusterIP: "172.30.0.12", nodePort: 30082, stickyMaxAgeSeconds: 60 }),
        [
          ep(POD_A, 8080, local),
          ep(POD_B, 8080, local),
        ],
      ),
      sps(svc({ name: "empty", clusterIP: "172.30.0.13", nodePort: 30083 })),
      sps(
        svc({ name: "dns", clusterIP: "172.30.0.53", port: 53, protocol: "UDP", portName: "dns" }),
        [
          ep(POD_A, 53, local),
          ep(POD_B, 53, local),
        ],
      ),
    ]);
    const report = await proxier.sync(s);
    assert.equal(report.full, true);

    const fromClient = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.10:80",
      count: 30,
    });
    assert.deepEqual(names(fromClient), ["pod-a", "pod-b", "pod-r"]);
    assert.deepEqual(peers(fromClient), [CLIENT]);
    const udp = await topo.probe({ from: "client", proto: "udp", to: "172.30.0.53:53", count: 20 });
    assert.deepEqual(names(udp), ["pod-a", "pod-b"]);

    const np = await topo.probe({ from: "external", proto: "tcp", to: `${NODE}:30080`, count: 30 });
    assert.deepEqual(names(np), ["pod-a", "pod-b", "pod-r"]);
    assert.ok(!peers(np).includes(EXTERNAL), `external traffic is masqueraded: ${peers(np)}`);

    const loc = await topo.probe({
      from: "external",
      proto: "tcp",
      to: `${NODE}:30081`,
      count: 20,
    });
    assert.deepEqual(names(loc), ["pod-a"]);
    assert.deepEqual(peers(loc), [EXTERNAL]);

    const sticky = await topo.probe({
      from: "external",
      proto: "tcp",
      to: `${NODE}:30082`,
      count: 10,
      concurrency: 1,
    });
    // Every attempt answers, from one pod (the affinity picks share one jhash seed).
    const stuck = sticky.filter((a) => a.ok);
    assert.equal(stuck.length, 10, JSON.stringify(sticky));
    assert.equal(names(stuck).length, 1, JSON.stringify(sticky));

    const hairpin = await topo.probe({
      from: "pod-a",
      proto: "tcp",
      to: "172.30.0.10:80",
      count: 30,
    });
    for (const a of hairpin) {
      if (a.ok && a.name === "pod-a") {
        assert.notEqual(a.peer.split(":")[0], POD_A, "hairpin masqueraded");
      }
    }

    assert.deepEqual(
      names(await topo.probe({ from: "client", proto: "tcp", to: "172.30.0.13:80" })),
      ["error:refused"],
    );
    assert.deepEqual(
      names(await topo.probe({ from: "external", proto: "tcp", to: `${NODE}:30083` })),
      ["error:refused"],
    );
    assert.deepEqual(
      names(await topo.probe({ from: "client", proto: "tcp", to: "172.30.0.10:81" })),
      ["error:refused"],
    );

    // One endpoint removed: a partial sync, and traffic follows.
    const services = new Map(s.services);
    const webKey = [...services.keys()].find((k) => k.includes("/web:"))!;
    services.set(
      webKey,
      sps(svc({ name: "web", clusterIP: "172.30.0.10", nodePort: 30080 }), [
        ep(POD_A, 8080, local),
      ]),
    );
    const r2 = await proxier.sync({
      ...s,
      services,
      changed: new Set([webKey]),
      forceFullSync: false,
    });
    assert.equal(r2.full, false);
    assert.equal(await proxier.rulesFlushed(), false);
    // A restarted proxier finds the kernel's table equal to its render and writes nothing.
    const restarted = createNftablesProxier({
      family: "IPv4",
      runner,
      clusterCIDRs: ["10.0.0.0/8"],
    });
    const r3 = await restarted.sync({ ...s, services, forceFullSync: true });
    assert.equal(r3.adopted, true);
    assert.deepEqual(
      names(await topo.probe({ from: "client", proto: "tcp", to: "172.30.0.10:80", count: 10 })),
      ["pod-a"],
    );
    const deleted = await topo.exec("node", "nft", ["delete", "table", "ip", "kube-proxy"]);
    assert.equal(deleted.code, 0, deleted.stderr);
    assert.equal(await proxier.rulesFlushed(), true);
  } catch (err) {
    console.error(topo.logs());
    throw err;
  } finally {
    await topo.destroy();
  }
});
