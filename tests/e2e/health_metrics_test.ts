/**
 * Operating the real program: /metrics values move with syncs, /healthz goes 503 while every
 * restore fails and back to 200 once it recovers, SIGINT stops it cleanly, and a changed
 * --config file makes it exit 2.
 */
import assert from "node:assert/strict";
import { type SpawnedProcess, spawnProxy, type Topology } from "../../scripts/netns/mod.ts";
import { endpointSlice, list, node1, service } from "./support/cluster_objects.ts";
import { createRestoreSwitch, httpGet, sample } from "./support/env_proxy.ts";
import { eventually, ManifestDir, startProxy } from "./support/proxy_process.ts";
import { type TopologyContext, withTopology } from "./support/with_topology.ts";

const HTTP = [{ name: "http", port: 80, targetPort: 8080 }];
const METRICS = "http://127.0.0.1:10249/metrics";
const HEALTHZ = "http://127.0.0.1:10256/healthz";
const V4 = '{ip_family="IPv4"}';

function state(services: number) {
  const items: unknown[] = [node1()];
  for (let i = 1; i <= services; i++) {
    items.push(service("demo", `web${i}`, `172.30.0.${10 + i}`, HTTP));
    items.push(endpointSlice("demo", `web${i}`, [`10.0.1.${1 + i}`], HTTP));
  }
  return list(items);
}

/** A throwaway node namespace and manifest folder around `body`. */
function withNode(prefix: string, body: (ctx: TopologyContext) => Promise<void>): Promise<void> {
  return withTopology({ prefix, ipv6: false, pods: [] }, body);
}

/** On top of startProxy's defaults: /healthz turns 503 after 2 x this without a sync. */
const SYNC_PERIOD = "--iptables-sync-period=2s";

async function scrape(topo: Topology): Promise<string> {
  const res = await httpGet(topo, METRICS);
  assert.equal(res.status, 200);
  return res.body;
}

Deno.test("e2e: /metrics moves with syncs; /healthz is 503 while every restore fails, then 200", async () => {
  const restore = await createRestoreSwitch("hmwrap");
  try {
    await withNode("hmmet", async ({ topo, dir }) => {
      await dir.write("c.json", state(1));
      const env = { PATH: `${restore.dir}:${Deno.env.get("PATH")}` };
      await startProxy(topo, [SYNC_PERIOD, `--manifests=${dir.path}`], { env });

      const first = await scrape(topo);
      const syncs = sample(first, `kubeproxy_sync_proxy_rules_duration_seconds_count${V4}`)!;
      const natRules = sample(
        first,
        `kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="nat"}`,
      )!;
      assert.ok(syncs >= 1, first);
      assert.ok(natRules > 0);
      // What the last sync wrote: everything after the first, nothing after an idle periodic one.
      for (const table of ["nat", "filter"]) {
        const last = `kubeproxy_sync_proxy_rules_iptables_last{ip_family="IPv4",table="${table}"}`;
        assert.notEqual(sample(first, last), null, last);
      }
      assert.equal(sample(first, "kubeproxy_sync_proxy_rules_endpoint_changes_total"), 1);
      assert.equal(sample(first, "kubeproxy_sync_proxy_rules_service_changes_total"), 1);
      assert.ok(sample(first, `kubeproxy_sync_proxy_rules_last_timestamp_seconds${V4}`)! > 0);
      assert.ok(sample(first, "process_resident_memory_bytes")! > 0, "process metrics");
      assert.ok(sample(first, "process_start_time_seconds")! > 1.7e9);
      // Failure counters are there at 0 before anything fails, so rate() and alerts see the first.
      for (const name of ["iptables_restore_failures", "iptables_partial_restore_failures"]) {
        assert.equal(sample(first, `kubeproxy_sync_proxy_rules_${name}_total${V4}`), 0, name);
      }
      assert.equal(sample(first, `kubeproxy_network_programming_duration_seconds_count${V4}`), 0);
      assert.equal(sample(first, "kubeproxy_sync_proxy_rules_nftables_sync_failures_total"), null);
      assert.equal((await httpGet(topo, HEALTHZ)).status, 200);

      // A second service: every counter moves.
      await dir.write("c.json", state(2));
      await eventually("the second service in the metrics", 10_000, async () => {
        const m = await scrape(topo);
        return sample(m, "kubeproxy_sync_proxy_rules_endpoint_changes_total") === 2 &&
          sample(m, "kubeproxy_sync_proxy_rules_service_changes_total") === 2 &&
          sample(m, `kubeproxy_sync_proxy_rules_duration_seconds_count${V4}`)! > syncs &&
          sample(m, `kubeproxy_sync_proxy_rules_iptables_total{ip_family="IPv4",table="nat"}`)! >
            natRules;
      });

      // Every restore fails from now on: a queued change is not applied within 2 x 2 s.
      await restore.fail(true);
      await dir.write("c.json", state(3));
      const failedAfter = await eventually(
        "/healthz 503",
        15_000,
        async () => (await httpGet(topo, HEALTHZ)).status === 503,
      );
      assert.ok(failedAfter >= 3000, `503 after ${failedAfter} ms, before 2 x syncPeriod`);
      const broken = await scrape(topo);
      assert.ok(
        sample(broken, `kubeproxy_sync_proxy_rules_iptables_restore_failures_total${V4}`)! >= 1,
      );
      assert.ok(sample(broken, 'kubeproxy_proxy_healthz_total{code="503"}')! >= 1);
      assert.equal((await httpGet(topo, "http://127.0.0.1:10256/livez")).status, 503);
      const nat = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
      assert.doesNotMatch(nat.stdout, /172\.30\.0\.13/, "the failing restore applied nothing");

      // The kernel takes restores again: the retry applies the change and health comes back.
      await restore.fail(false);
      await eventually(
        "/healthz 200 again",
        15_000,
        async () => (await httpGet(topo, HEALTHZ)).status === 200,
      );
      const fixed = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
      assert.match(fixed.stdout, /172\.30\.0\.13/);
      assert.ok(sample(await scrape(topo), 'kubeproxy_proxy_healthz_total{code="200"}')! >= 2);
    });
  } finally {
    await restore.remove();
  }
});

/** Sends `signal` and returns the exit status and how long it took. */
async function stopWith(proc: SpawnedProcess, signal: Deno.Signal) {
  const started = Date.now();
  Deno.kill(proc.pid, signal);
  const timer = setTimeout(() => Deno.kill(proc.pid, "SIGKILL"), 5000);
  try {
    const status = await proc.status;
    return { code: status.code, ms: Date.now() - started };
  } finally {
    clearTimeout(timer);
  }
}

Deno.test("e2e: SIGINT stops the proxy with exit 0 within 2 s and leaves its rules", async () => {
  await withNode("hmint", async ({ topo, dir }) => {
    await dir.write("c.json", state(1));
    const proxy = await startProxy(topo, [SYNC_PERIOD, `--manifests=${dir.path}`]);
    const { code, ms } = await stopWith(proxy, "SIGINT");
    assert.equal(code, 0, proxy.output());
    assert.ok(ms < 2000, `exited after ${ms} ms`);
    assert.match(proxy.output(), /Received signal, shutting down.*SIGINT/);
    const nat = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
    assert.match(nat.stdout, /172\.30\.0\.11/);
  });
});

const CONFIG = `apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clusterCIDR: 10.0.0.0/8
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
iptables:
  minSyncPeriod: 1s
`;

Deno.test("e2e: the proxy exits 2 when its --config file changes on disk", async () => {
  await withNode("hmcfg", async ({ topo, dir }) => {
    await dir.write("c.json", state(1));
    const cfgDir = await ManifestDir.create("hmcfgfile");
    try {
      const path = `${cfgDir.path}/config.yaml`;
      await Deno.writeTextFile(path, CONFIG);
      const proxy = await spawnProxy(topo, [
        `--config=${path}`,
        "--hostname-override=node1",
        `--manifests=${dir.path}`,
        "-v=2",
      ]);
      // Rewriting the same content is not a change.
      await Deno.writeTextFile(path, CONFIG);
      await new Promise((r) => setTimeout(r, 1000));
      assert.equal(await Promise.race([proxy.status.then(() => "exited"), "running"]), "running");

      // An operator edits the file the way config tools do: write aside, rename over.
      await Deno.writeTextFile(`${path}.tmp`, CONFIG + "oomScoreAdj: -500\n");
      await Deno.rename(`${path}.tmp`, path);
      const timer = setTimeout(() => Deno.kill(proxy.pid, "SIGKILL"), 10_000);
      const status = await proxy.status;
      clearTimeout(timer);
      assert.equal(status.code, 2, proxy.output());
      assert.match(proxy.output(), /Config file .*config\.yaml.* changed on disk/);
    } finally {
      await cfgDir.remove();
    }
  });
});
