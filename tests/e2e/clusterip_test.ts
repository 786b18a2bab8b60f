/**
 * The real program in iptables mode, driven by manifest files, proven with real TCP and UDP
 * packets in network namespaces. Needs root; fails loudly without it.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import type { ProbeAnswer, Topology } from "../../scripts/netns/mod.ts";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { mentionsProxyChain } from "./support/kube_chains.ts";
import { eventually, type ManifestDir, runProxyOnce } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];
const DNS: TestPort[] = [{ name: "dns", port: 53, targetPort: 8080, protocol: "UDP" }];
const POD_A = "10.0.1.2", POD_B = "10.0.2.2", CLIENT = "10.0.3.2";

function clusterState(webEndpoints: string[], extra: unknown[] = []) {
  return list([
    node1(),
    service("demo", "web", "172.30.0.10", WEB),
    endpointSlice("demo", "web", webEndpoints, WEB),
    service("demo", "dns", "172.30.0.53", DNS),
    endpointSlice("demo", "dns", [POD_A, POD_B], DNS),
    service("demo", "empty", "172.30.0.20", WEB),
    ...extra,
  ]);
}

function answeredBy(answers: ProbeAnswer[]): Set<string> {
  return new Set(answers.map((a) => a.ok ? a.name : `error:${a.error}`));
}

/** The three pods of these tests, with the proxy running on `state`. */
function withPods(
  prefix: string,
  state: unknown,
  body: (topo: Topology, dir: ManifestDir) => Promise<void>,
): Promise<void> {
  return withProxy({
    prefix,
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }, {
      name: "client",
      ip: CLIENT,
    }],
    state,
  }, ({ topo, dir }) => body(topo, dir));
}

Deno.test("e2e: pod -> ClusterIP reaches every endpoint over TCP and UDP, unmasqueraded", async () => {
  await withPods("kpcip", clusterState([POD_A, POD_B]), async (topo) => {
    const tcp = await topo.probe({ from: "client", proto: "tcp", to: "172.30.0.10:80", count: 40 });
    assert.deepEqual([...answeredBy(tcp)].sort(), ["pod-a", "pod-b"]);
    for (const a of tcp) assert.ok(a.ok && a.peer.startsWith(`${CLIENT}:`), JSON.stringify(a));
    const udp = await topo.probe({ from: "client", proto: "udp", to: "172.30.0.53:53", count: 40 });
    assert.deepEqual([...answeredBy(udp)].sort(), ["pod-a", "pod-b"]);
    for (const a of udp) assert.ok(a.ok && a.peer.startsWith(`${CLIENT}:`), JSON.stringify(a));
  });
});

Deno.test("e2e: a pod calling its own service (hairpin) is masqueraded", async () => {
  await withPods("kphair", clusterState([POD_A]), async (topo) => {
    const answers = await topo.probe({
      from: "pod-a",
      proto: "tcp",
      to: "172.30.0.10:80",
      count: 5,
    });
    for (const a of answers) {
      assert.ok(a.ok, JSON.stringify(a));
      assert.equal(a.name, "pod-a");
      assert.ok(!a.peer.startsWith(`${POD_A}:`), `hairpin source not masqueraded: ${a.peer}`);
    }
  });
});

Deno.test("e2e: a service without endpoints is rejected at once, not dropped", async () => {
  await withPods("kprej", clusterState([POD_A, POD_B]), async (topo) => {
    const started = Date.now();
    const answers = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.20:80",
      count: 3,
      timeoutMs: 3000,
    });
    for (const a of answers) assert.ok(!a.ok && a.error === "refused", JSON.stringify(a));
    assert.ok(Date.now() - started < 2500, "REJECT must answer before the probe's 3 s timeout");
  });
});

Deno.test("e2e: editing the manifest moves traffic, deleting the service stops it, --cleanup removes every KUBE- chain", async () => {
  await withPods("kpedit", clusterState([POD_A]), async (topo, dir) => {
    const before = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.10:80",
      count: 5,
    });
    assert.deepEqual([...answeredBy(before)], ["pod-a"]);

    // minSyncPeriod (1 s) + 2 s.
    await dir.write("cluster.json", clusterState([POD_B]));
    await eventually("traffic to move to pod-b", 3000, async () => {
      const now = await topo.probe({
        from: "client",
        proto: "tcp",
        to: "172.30.0.10:80",
        count: 5,
      });
      return [...answeredBy(now)].join() === "pod-b";
    });

    const withoutWeb = list([node1(), service("demo", "empty", "172.30.0.20", WEB)]);
    await dir.write("cluster.json", withoutWeb);
    await eventually("traffic to the deleted service to stop", 3000, async () => {
      const now = await topo.probe({
        from: "client",
        proto: "tcp",
        to: "172.30.0.10:80",
        count: 2,
        timeoutMs: 300,
      });
      return now.every((a) => !a.ok);
    });
    const saved = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
    assert.ok(!saved.stdout.includes("demo/web"), "rules of the deleted service remain");
    assert.ok(saved.stdout.includes("KUBE-SERVICES"));

    const proxy = topo.logs();
    assert.match(proxy, /Synced proxy rules/);
    const cleanup = await runProxyOnce(topo, ["--cleanup"]);
    assert.equal(cleanup.code, 0, cleanup.stderr);
    for (const table of ["nat", "filter", "mangle"]) {
      const out = await topo.exec("node", "iptables-legacy-save", ["-t", table]);
      const ours = out.stdout.split("\n").filter(mentionsProxyChain);
      assert.deepEqual(ours, [], `${table} still has KUBE- rules`);
    }
    const again = await runProxyOnce(topo, ["--cleanup"]);
    assert.equal(again.code, 0, "a second --cleanup on a clean node also succeeds");
  });
});

Deno.test("e2e: an invalid object is skipped and counted while the rest syncs", async () => {
  const bad = service("demo", "bad", "10.0.0.300", WEB);
  await withPods("kpbad", clusterState([POD_A], [bad]), async (topo) => {
    const answers = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.10:80",
      count: 3,
    });
    assert.deepEqual([...answeredBy(answers)], ["pod-a"]);
    const saved = await topo.exec("node", "iptables-legacy-save", []);
    assert.ok(!saved.stdout.includes("10.0.0.300"));
    assert.ok(!saved.stdout.includes("demo/bad"));
    assert.match(topo.logs(), /Skipping invalid object.*demo\/bad/);
    const metrics = await topo.exec("node", "curl", ["-s", "http://127.0.0.1:10249/metrics"]);
    assert.match(metrics.stdout, /kubeproxy_invalid_objects_total\{kind="Service"\} 1/);
    assert.match(
      metrics.stdout,
      /kubeproxy_sync_proxy_rules_last_timestamp_seconds{ip_family="IPv4"} \d/,
    );
  });
});
