/**
 * The real program in nftables mode recovering from kernel-side trouble, with real packets:
 * - every `nft -f` failing (a wrapper first in PATH): the previous table stays in the kernel and
 *   keeps serving, `kubeproxy_sync_proxy_rules_nftables_sync_failures_total` counts, and once
 *   nft works again the next sync is full (it rewrites the whole table) and traffic follows;
 * - `nft delete table ip kube-proxy` behind its back: the table is recreated by a full sync
 *   within syncPeriod and traffic flows again.
 * Needs root and nft; fails loudly without them.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import type { Topology } from "../../scripts/netns/mod.ts";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { E2E_MODES } from "./support/e2e_modes.ts";
import { createRestoreSwitch, httpGet, sample } from "./support/env_proxy.ts";
import { eventually, startProxy } from "./support/proxy_process.ts";
import { withTopology } from "./support/with_topology.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];
const POD_A = "10.0.1.2", POD_B = "10.0.2.2";
const PODS = [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }, {
  name: "client",
  ip: "10.0.3.2",
}];
const METRICS = "http://127.0.0.1:10249/metrics";
const FAILURES = 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total{ip_family="IPv4"}';
const NFT_ARGS = ["--proxy-mode=nftables"];
/** The -v=2 line of each full IPv4 sync. */
const FULL_SYNC = /Synced proxy rules[^\n]*IPv4[^\n]*kind="?full/g;

function cluster(endpoints: readonly string[]) {
  return list([
    node1(),
    service("demo", "web", "172.30.0.10", WEB),
    endpointSlice("demo", "web", endpoints, WEB),
  ]);
}

/** Which pods answer 172.30.0.10:80 from the client (errors as `error:<kind>`). */
async function answering(topo: Topology, count = 12): Promise<string[]> {
  const answers = await topo.probe({
    from: "client",
    proto: "tcp",
    to: "172.30.0.10:80",
    count,
    timeoutMs: 500,
  });
  return [...new Set(answers.map((a) => (a.ok ? a.name : `error:${a.error}`)))].sort();
}

async function metric(topo: Topology, series: string): Promise<number | null> {
  const res = await httpGet(topo, METRICS);
  return res.status === 200 ? sample(res.body, series) : null;
}

Deno.test("e2e [nftables]: a failed nft -f leaves the previous table serving, is counted, and the next sync is full", async () => {
  const wrapper = await createRestoreSwitch("nfwrap", E2E_MODES.nftables);
  try {
    await withTopology(
      { prefix: "nfrfail", ipv6: false, pods: PODS, requireCommands: ["nft"] },
      async ({ topo, dir }) => {
        await topo.startEchoServers();
        await dir.write("c.json", cluster([POD_A]));
        const env = { PATH: `${wrapper.dir}:${Deno.env.get("PATH")}` };
        await startProxy(topo, [
          ...NFT_ARGS,
          "--iptables-sync-period=2s",
          `--manifests=${dir.path}`,
        ], {
          env,
        });
        assert.deepEqual(await answering(topo), ["pod-a"]);
        assert.equal(await metric(topo, FAILURES), 0, "the counter is there at 0 from the start");
        const before = await topo.exec("node", "nft", ["list", "table", "ip", "kube-proxy"]);
        assert.equal(before.code, 0, before.stderr);

        // Every nft -f fails: the change is not applied, the old table keeps serving.
        await wrapper.fail(true);
        await dir.write("c.json", cluster([POD_A, POD_B]));
        await eventually("a counted sync failure", 10_000, async () => {
          return ((await metric(topo, FAILURES)) ?? 0) >= 1;
        });
        assert.deepEqual(await answering(topo), ["pod-a"], "the previous table still serves");
        const during = await topo.exec("node", "nft", ["list", "table", "ip", "kube-proxy"]);
        assert.equal(during.stdout, before.stdout, "the failed transaction changed nothing");
        const fullBefore = (topo.logs().match(FULL_SYNC) ?? []).length;

        // nft works again: the retry (within syncPeriod) is a full sync and traffic follows.
        await wrapper.fail(false);
        await eventually("both pods to answer", 10_000, async () => {
          return (await answering(topo)).join() === "pod-a,pod-b";
        });
        // The sync's log line comes after its nft -f has applied, so traffic can follow first.
        const fullSyncs = () => (topo.logs().match(FULL_SYNC) ?? []).length;
        await eventually(
          "the full sync's log line",
          5_000,
          () => Promise.resolve(fullSyncs() > fullBefore),
        )
          .catch(() => {});
        assert.ok(fullSyncs() > fullBefore, `a full sync after the failure:\n${topo.logs()}`);
        assert.match(topo.logs(), /nftables sync failed/);
      },
    );
  } finally {
    await wrapper.remove();
  }
});

Deno.test("e2e [nftables]: a table deleted behind the proxy's back is recreated within syncPeriod", async () => {
  await withTopology(
    { prefix: "nfrdel", ipv6: false, pods: PODS, requireCommands: ["nft"] },
    async ({ topo, dir }) => {
      await topo.startEchoServers();
      await dir.write("c.json", cluster([POD_A]));
      // syncPeriod paces the check that notices a missing table (upstream's default is 30 s).
      await startProxy(topo, [
        ...NFT_ARGS,
        "--iptables-sync-period=2s",
        `--manifests=${dir.path}`,
      ]);
      assert.deepEqual(await answering(topo), ["pod-a"]);

      const deleted = await topo.exec("node", "nft", ["delete", "table", "ip", "kube-proxy"]);
      assert.equal(deleted.code, 0, deleted.stderr);
      // Without the table nothing DNATs the ClusterIP: nothing answers.
      assert.ok(!(await answering(topo, 2)).includes("pod-a"), "traffic stops without the table");

      // syncPeriod (2 s) + margin; no cluster change is needed to bring it back.
      const ms = await eventually("traffic to flow again", 6000, async () => {
        return (await answering(topo, 2)).join() === "pod-a";
      });
      assert.ok(ms <= 6000);
      assert.match(
        topo.logs(),
        /Proxy rules were flushed; forcing a full resync|nftables table missing, recreating it/,
      );
      const listed = await topo.exec("node", "nft", ["list", "chains", "ip"]);
      assert.match(listed.stdout, /table ip kube-proxy/);
    },
  );
});
