/**
 * The real program's metrics and servers: in iptables mode the nfacct counters move with an
 * INVALID packet and a localhost NodePort connection; each mode's first scrape passes
 * `promtool check metrics`; a metrics port already taken exits 1 with
 * --bind-address-hard-fail and is otherwise retried until it frees. Needs root, nfacct and
 * promtool (scripts/install_test_deps.sh). IP plan: node 192.168.0.2, local pod 10.0.1.2,
 * services 172.30.0.0/16, external client 203.0.113.2.
 */
import assert from "node:assert/strict";
import { type Topology } from "../../scripts/netns/mod.ts";
import { list, node1 } from "./support/cluster_objects.ts";
import { type FlowPort, flowService, flowSlice, local } from "./support/flow_objects.ts";
import { httpGet, sample } from "./support/env_proxy.ts";
import { eventually, runProxyOnce, startProxy } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";
import { withTopology } from "./support/with_topology.ts";
import { promtoolProblems } from "../support/promtool.ts";

const POD_A = "10.0.1.2";
const TARGET = 8080;
const NP: FlowPort = { name: "http", port: 80, targetPort: TARGET, nodePort: 30161 };
const METRICS = "http://127.0.0.1:10249/metrics";
const INVALID = "kubeproxy_iptables_ct_state_invalid_dropped_packets_total";
const LOCALHOST = "kubeproxy_iptables_localhost_nodeports_accepted_packets_total";

function clusterState() {
  return list([
    node1(),
    flowService("demo", "np", "172.30.0.61", [NP], { type: "NodePort" }),
    flowSlice("demo", "np", "np-1", [local(POD_A)], [NP]),
  ]);
}

async function scrape(topo: Topology): Promise<string> {
  const res = await httpGet(topo, METRICS);
  assert.equal(res.status, 200);
  return res.body;
}

Deno.test("e2e: iptables mode's nfacct counters move with an INVALID packet and a localhost NodePort", async () => {
  await withProxy({
    prefix: "mxnf",
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }],
    state: clusterState(),
    echo: { tcp: [TARGET], udp: [] },
    requireCommands: ["nfacct", "promtool"],
  }, async ({ topo }) => {
    const filter = (await topo.exec("node", "iptables-legacy-save", ["-t", "filter"])).stdout;
    assert.match(
      filter,
      /--ctstate INVALID -m nfacct --nfacct-name +ct_state_invalid_dropped_pkts/,
    );
    const nat = (await topo.exec("node", "iptables-legacy-save", ["-t", "nat"])).stdout;
    assert.match(nat, /-d 127\.0\.0\.0\/8 .*--dport 30161 -m nfacct --nfacct-name +localhost_nps/);

    const first = await scrape(topo);
    assert.deepEqual(await promtoolProblems(first), [], "iptables mode's first scrape");
    const invalid0 = sample(first, INVALID), localhost0 = sample(first, LOCALHOST);
    assert.notEqual(invalid0, null, first);
    assert.notEqual(localhost0, null, first);

    // A SYN with a wrong checksum, forwarded to the pod: conntrack says INVALID, KUBE-FORWARD drops.
    const script = new URL("./support/tcp_invalid.ts", import.meta.url).pathname;
    const sent = await topo.exec("external", Deno.execPath(), [
      "run",
      "--allow-ffi",
      script,
      `${POD_A}:${TARGET}`,
    ]);
    assert.equal(sent.code, 0, sent.stderr);
    // A connection to the NodePort on localhost.
    await topo.exec("node", "curl", ["-s", "--max-time", "2", "http://127.0.0.1:30161/"]);
    await eventually("both nfacct counters moved", 5_000, async () => {
      const m = await scrape(topo);
      return sample(m, INVALID)! > invalid0! && sample(m, LOCALHOST)! > localhost0!;
    });
  });
});

Deno.test("e2e: nftables mode's first scrape passes promtool check metrics", async () => {
  await withTopology(
    { prefix: "mxpt", ipv6: false, pods: [], requireCommands: ["promtool"] },
    async ({ topo, dir }) => {
      await dir.write("cluster.json", clusterState());
      const proxy = await startProxy(topo, [`--manifests=${dir.path}`, "--proxy-mode=nftables"]);
      try {
        const first = await scrape(topo);
        assert.match(first, /kubeproxy_sync_proxy_rules_nftables_sync_failures_total/);
        assert.doesNotMatch(first, /kubeproxy_iptables_/);
        assert.deepEqual(await promtoolProblems(first), [], "nftables mode's first scrape");
      } finally {
        await proxy.kill();
      }
    },
  );
});

Deno.test("e2e: a taken metrics port exits 1 with --bind-address-hard-fail, else is retried until free", async () => {
  await withTopology({ prefix: "mxbf", ipv6: false, pods: [] }, async ({ topo, dir }) => {
    await dir.write("cluster.json", clusterState());
    const holder = topo.spawn("node", "socat", ["TCP-LISTEN:10249,bind=127.0.0.1,fork", "-"], {
      label: "port holder",
    });
    try {
      await eventually("the holder listens", 5_000, async () => {
        const out = await topo.exec("node", "ss", ["-Htln", "sport = :10249"]);
        return out.stdout.includes("127.0.0.1:10249");
      });
      const args = [
        "--hostname-override=node1",
        "--healthz-bind-address=127.0.0.1:10256",
        "--metrics-bind-address=127.0.0.1:10249",
        `--manifests=${dir.path}`,
        "--proxy-mode=nftables",
      ];
      const hard = await runProxyOnce(topo, [...args, "--bind-address-hard-fail"]);
      assert.equal(hard.code, 1, hard.stdout + hard.stderr);
      assert.match(
        hard.stdout + hard.stderr,
        /Cannot start the metrics server on \\?"127\.0\.0\.1:10249\\?": Address already in use/,
      );

      const proxy = await startProxy(topo, [...args, "-v=2"]);
      try {
        await proxy.waitForOutput(/Failed to start the metrics server; retrying/, 5_000);
        await holder.kill();
        await proxy.waitForOutput(/Started the metrics server/, 15_000);
        const m = await httpGet(topo, METRICS);
        assert.equal(m.status, 200);
        assert.match(m.body, /kubeproxy_sync_proxy_rules_duration_seconds/);
      } finally {
        await proxy.kill();
      }
    } finally {
      await holder.kill();
    }
  });
});
