import assert from "node:assert/strict";
import { Registry } from "../../lib/metrics/prom.ts";
import { createMemoryLogger } from "../../lib/log/mod.ts";
import { NFACCT_COUNTERS } from "../../lib/backends/iptables/nfacct.ts";
import { NFACCT_METRICS } from "../../lib/backends/iptables/metrics.ts";
import { loadMode, type ModeMetricsExtras, type ProxyModeName } from "../../lib/backends/mod.ts";
import { createProxyMetrics, registerProcessMetrics } from "../../lib/metrics/mod.ts";
import {
  maxFdsFromLimits,
  type ProcessSource,
  virtualMemoryFromStat,
} from "../../lib/metrics/process_metrics.ts";
import {
  NETWORK_PROGRAMMING_BUCKETS,
  SYNC_DURATION_BUCKETS,
} from "../../lib/metrics/proxy_metrics.ts";

/** Registers `mode`'s own metrics, as the app does through the mode registry. */
async function createModeMetrics(
  registry: Registry,
  mode: ProxyModeName,
  extras: ModeMetricsExtras = {},
) {
  return (await loadMode(mode)).registerMetrics(registry, extras);
}

type MetricShape = { type: string; labels: string[] };

/** The core metrics of REFERENCE.md (every mode) with upstream's (v1.34) type and labels. */
const UPSTREAM: Record<string, MetricShape> = {
  sync_proxy_rules_duration_seconds: { type: "histogram", labels: ["ip_family"] },
  network_programming_duration_seconds: { type: "histogram", labels: ["ip_family"] },
  sync_proxy_rules_last_timestamp_seconds: { type: "gauge", labels: ["ip_family"] },
  sync_proxy_rules_last_queued_timestamp_seconds: { type: "gauge", labels: ["ip_family"] },
  sync_proxy_rules_no_local_endpoints_total: {
    type: "gauge",
    labels: ["ip_family", "traffic_policy"],
  },
  sync_proxy_rules_endpoint_changes_pending: { type: "gauge", labels: [] },
  sync_proxy_rules_service_changes_pending: { type: "gauge", labels: [] },
  sync_proxy_rules_endpoint_changes_total: { type: "counter", labels: [] },
  sync_proxy_rules_service_changes_total: { type: "counter", labels: [] },
  proxy_healthz_total: { type: "counter", labels: ["code"] },
  proxy_livez_total: { type: "counter", labels: ["code"] },
  conntrack_reconciler_deleted_entries_total: { type: "counter", labels: ["ip_family"] },
  conntrack_reconciler_sync_duration_seconds: { type: "histogram", labels: ["ip_family"] },
};

const RESTORE_FAILURES = "sync_proxy_rules_iptables_restore_failures_total";
const family = { type: "counter", labels: ["ip_family"] };

/** What each mode registers besides the core set, as upstream's RegisterMetrics(mode). */
const MODE_ONLY: Record<"iptables" | "ipvs" | "nftables", Record<string, MetricShape>> = {
  iptables: {
    // nfacct-backed, registered when the node has nfacct (see the packet counter tests).
    iptables_ct_state_invalid_dropped_packets_total: { type: "counter", labels: [] },
    iptables_localhost_nodeports_accepted_packets_total: { type: "counter", labels: [] },
    sync_full_proxy_rules_duration_seconds: { type: "histogram", labels: ["ip_family"] },
    sync_partial_proxy_rules_duration_seconds: { type: "histogram", labels: ["ip_family"] },
    sync_proxy_rules_iptables_total: { type: "gauge", labels: ["ip_family", "table"] },
    sync_proxy_rules_iptables_last: { type: "gauge", labels: ["ip_family", "table"] },
    [RESTORE_FAILURES]: family,
    sync_proxy_rules_iptables_partial_restore_failures_total: family,
  },
  ipvs: { [RESTORE_FAILURES]: family },
  nftables: {
    sync_full_proxy_rules_duration_seconds: { type: "histogram", labels: ["ip_family"] },
    sync_partial_proxy_rules_duration_seconds: { type: "histogram", labels: ["ip_family"] },
    sync_proxy_rules_nftables_sync_failures_total: family,
    sync_proxy_rules_nftables_cleanup_failures_total: family,
  },
};

/** Ours in every mode (docs/metrics.md): counters of errors upstream only logs, or has not. */
const CORE_OURS = [
  "kubeproxy_invalid_objects_total",
  "kubeproxy_token_file_read_failures_total",
  "kubeproxy_watch_event_handler_failures_total",
  "kubeproxy_config_watch_failures_total",
  "kubeproxy_conntrack_reconciler_failures_total",
];

/** What each mode registers of ours besides the core set. */
const MODE_OURS: Record<"iptables" | "ipvs" | "nftables", string[]> = {
  iptables: [],
  ipvs: ["kubeproxy_ipvs_graceful_termination_failures_total"],
  nftables: [],
};

/** Fails unless `registry` holds exactly the kubeproxy_ metrics of `want`, typed and labelled. */
async function assertRegistered(
  registry: Registry,
  want: Record<string, MetricShape>,
  ours: readonly string[] = [],
) {
  const OURS = [...CORE_OURS, ...ours];
  const json = await registry.getMetricsAsJSON();
  assert.deepEqual(
    json.map((j) => j.name).filter((n) => n.startsWith("kubeproxy_")).sort(),
    Object.keys(want).map((n) => `kubeproxy_${n}`).concat(OURS).sort(),
  );
  for (const [name, shape] of Object.entries(want)) {
    const m = registry.getSingleMetric(`kubeproxy_${name}`);
    assert.ok(m, `kubeproxy_${name} is missing`);
    const entry = json.find((j) => j.name === `kubeproxy_${name}`);
    assert.equal(entry?.type, shape.type, name);
    // prom-client keeps the declared label names on the metric object.
    assert.deepEqual((m as unknown as { labelNames: string[] }).labelNames, shape.labels, name);
  }
}

for (const mode of ["iptables", "ipvs", "nftables"] as const) {
  Deno.test(`registerMetrics() registers ${mode} mode's metrics as upstream does, no others`, async () => {
    const registry = new Registry();
    createProxyMetrics(registry);
    await createModeMetrics(registry, mode, { packetCounters: countersOf(new Map()) });
    await assertRegistered(registry, { ...UPSTREAM, ...MODE_ONLY[mode] }, MODE_OURS[mode]);
  });
}

/** Kernel packet counters that hold `packets` (name -> count); a null map fails every read. */
function countersOf(packets: Map<string, number> | null) {
  return {
    reads: 0,
    read() {
      this.reads++;
      return packets === null
        ? Promise.reject(new Error("nfacct: Operation not permitted"))
        : Promise.resolve(new Map(packets));
    },
  };
}

Deno.test("registerMetrics() leaves the nfacct counters out where the node has no nfacct", async () => {
  const registry = new Registry();
  createProxyMetrics(registry);
  await createModeMetrics(registry, "iptables");
  const { iptables_ct_state_invalid_dropped_packets_total: _a, ...rest } = MODE_ONLY.iptables;
  const { iptables_localhost_nodeports_accepted_packets_total: _b, ...withoutNfacct } = rest;
  await assertRegistered(registry, { ...UPSTREAM, ...withoutNfacct });
});

Deno.test("the nfacct counters report the kernel's packet counts, read once per scrape", async () => {
  const registry = new Registry();
  const packets = new Map([["ct_state_invalid_dropped_pkts", 3], [
    "localhost_nps_accepted_pkts",
    7,
  ]]);
  const counters = countersOf(packets);
  await createModeMetrics(registry, "iptables", { packetCounters: counters });
  const text = await registry.metrics();
  assert.match(text, /^# TYPE kubeproxy_iptables_ct_state_invalid_dropped_packets_total counter$/m);
  assert.match(text, /^kubeproxy_iptables_ct_state_invalid_dropped_packets_total 3$/m);
  assert.match(text, /^kubeproxy_iptables_localhost_nodeports_accepted_packets_total 7$/m);
  assert.equal(counters.reads, 1);
});

Deno.test("an nfacct counter that cannot be read is logged and shows no sample", async () => {
  const registry = new Registry();
  const logger = createMemoryLogger();
  // One object missing; then nfacct failing altogether.
  const missing = countersOf(new Map([["localhost_nps_accepted_pkts", 2]]));
  await createModeMetrics(registry, "iptables", { packetCounters: missing, logger });
  const text = await registry.metrics();
  assert.doesNotMatch(text, /^kubeproxy_iptables_ct_state_invalid_dropped_packets_total /m);
  assert.match(text, /^kubeproxy_iptables_localhost_nodeports_accepted_packets_total 2$/m);
  assert.match(logger.lines.join("\n"), /Failed to collect nfacct counter.*ct_state_invalid/);

  const failing = new Registry();
  await createModeMetrics(failing, "iptables", { packetCounters: countersOf(null), logger });
  const none = await failing.metrics();
  assert.doesNotMatch(none, /^kubeproxy_iptables_\w+_packets_total \d/m);
});

Deno.test("NFACCT_METRICS reads the nfacct objects iptables mode makes and its rules feed", () => {
  assert.deepEqual(NFACCT_METRICS.map((m) => m.counter), [...NFACCT_COUNTERS]);
});

Deno.test("createProxyMetrics() registers every upstream metric with its type and labels", async () => {
  const registry = new Registry();
  createProxyMetrics(registry);
  const json = await registry.getMetricsAsJSON();
  for (const [name, want] of Object.entries(UPSTREAM)) {
    const m = registry.getSingleMetric(`kubeproxy_${name}`);
    assert.ok(m, `kubeproxy_${name} is missing`);
    const entry = json.find((j) => j.name === `kubeproxy_${name}`);
    assert.equal(entry?.type, want.type, name);
    // prom-client keeps the declared label names on the metric object.
    assert.deepEqual((m as unknown as { labelNames: string[] }).labelNames, want.labels, name);
  }
});

Deno.test("the histograms use upstream's buckets", () => {
  assert.equal(SYNC_DURATION_BUCKETS.length, 15);
  assert.equal(SYNC_DURATION_BUCKETS[0], 0.001);
  assert.equal(SYNC_DURATION_BUCKETS[14], 16.384);
  // merge(0, LinearBuckets(0.25, 0.25, 2), (1, 1, 59), (60, 5, 12), (120, 30, 7)).
  assert.equal(NETWORK_PROGRAMMING_BUCKETS.length, 1 + 2 + 59 + 12 + 7);
  assert.deepEqual(NETWORK_PROGRAMMING_BUCKETS.slice(0, 4), [0, 0.25, 0.5, 1]);
  assert.equal(NETWORK_PROGRAMMING_BUCKETS[61], 59);
  assert.equal(NETWORK_PROGRAMMING_BUCKETS[62], 60);
  assert.equal(NETWORK_PROGRAMMING_BUCKETS[73], 115);
  assert.equal(NETWORK_PROGRAMMING_BUCKETS.at(-1), 300);
});

Deno.test("a family's mode metrics count under its ip_family and are present at 0 from the start", async () => {
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  metrics.primeFamilies(["IPv4", "IPv6"]);
  const forFamily = await createModeMetrics(registry, "iptables");
  const v4 = forFamily("IPv4"), v6 = forFamily("IPv6");
  const before = await registry.metrics();
  for (const f of ["IPv4", "IPv6"]) {
    assert.match(before, new RegExp(`_${RESTORE_FAILURES}\\{ip_family="${f}"\\} 0$`, "m"));
    assert.match(
      before,
      new RegExp(`_iptables_partial_restore_failures_total\\{ip_family="${f}"\\} 0$`, "m"),
    );
    assert.match(
      before,
      new RegExp(`network_programming_duration_seconds_count\\{ip_family="${f}"\\} 0$`, "m"),
    );
    assert.match(
      before,
      new RegExp(`sync_proxy_rules_duration_seconds_count\\{ip_family="${f}"\\} 0$`, "m"),
    );
  }
  v6.applyFailed(false);
  v4.applyFailed(true);
  v4.synced({ full: true, counts: { nat: 7, filter: 3 }, written: { nat: 7, filter: 3 } }, 0.2);
  v4.synced({ full: false, counts: { nat: 7, filter: 3 }, written: { nat: 2, filter: 0 } }, 0.1);
  const text = await registry.metrics();
  assert.match(text, new RegExp(`_${RESTORE_FAILURES}\\{ip_family="IPv6"\\} 1$`, "m"));
  assert.match(text, new RegExp(`_${RESTORE_FAILURES}\\{ip_family="IPv4"\\} 1$`, "m"));
  assert.match(text, /_partial_restore_failures_total\{ip_family="IPv6"\} 1$/m);
  assert.match(text, /_partial_restore_failures_total\{ip_family="IPv4"\} 0$/m);
  assert.match(text, /_iptables_total\{ip_family="IPv4",table="nat"\} 7$/m);
  // What the last sync wrote, a partial one's only what changed.
  assert.match(text, /_iptables_last\{ip_family="IPv4",table="nat"\} 2$/m);
  assert.match(text, /_iptables_last\{ip_family="IPv4",table="filter"\} 0$/m);
  assert.doesNotMatch(text, /_iptables_last\{ip_family="IPv6"/m);
  assert.match(text, /sync_full_proxy_rules_duration_seconds_count\{ip_family="IPv4"\} 1$/m);
});

Deno.test("nftables mode counts sync and cleanup failures per family", async () => {
  const registry = new Registry();
  const nft = (await createModeMetrics(registry, "nftables"))("IPv6");
  nft.applyFailed(true);
  nft.cleanupFailed();
  nft.cleanupFailed();
  const text = await registry.metrics();
  assert.match(text, /nftables_sync_failures_total\{ip_family="IPv6"\} 1$/m);
  assert.match(text, /nftables_cleanup_failures_total\{ip_family="IPv6"\} 2$/m);
});

const STAT = "4242 (deno main) S 1 4242 4242 0 -1 4194560 18000 0 0 0 120 30 0 0 20 0 9 0 " +
  "1234567 2147483648 12000 18446744073709551615 1 1 0 0 0 0 0 16781312 17410 0 0 0 17 1 0 0";

Deno.test("registerProcessMetrics() exports process_* values read at scrape time", async () => {
  let rss = 1000;
  const source: ProcessSource = {
    cpuUsage: () => ({ user: 1_500_000, system: 500_000 }),
    rss: () => rss,
    startTimeSeconds: 1_700_000_000.7,
    procFile: (f) =>
      f === "stat" ? STAT : "Max open files            1024                 4096  files\n",
    openFds: () => 12,
  };
  const registry = new Registry();
  registerProcessMetrics(registry, source);
  rss = 52_000_000;
  const text = await registry.metrics();
  assert.match(text, /^process_cpu_seconds_total 2$/m);
  assert.match(text, /^process_start_time_seconds 1700000000$/m);
  assert.match(text, /^process_resident_memory_bytes 52000000$/m);
  assert.match(text, /^process_virtual_memory_bytes 2147483648$/m);
  assert.match(text, /^process_open_fds 12$/m);
  assert.match(text, /^process_max_fds 1024$/m);
});

Deno.test("registerProcessMetrics() leaves out what /proc cannot tell under narrowed permissions", async () => {
  const registry = new Registry();
  registerProcessMetrics(registry, {
    cpuUsage: () => ({ user: 0, system: 0 }),
    rss: () => 1,
    startTimeSeconds: 1,
    procFile: () => null,
    openFds: () => null,
  });
  const text = await registry.metrics();
  assert.match(text, /^process_resident_memory_bytes 1$/m);
  assert.doesNotMatch(text, /process_open_fds|process_max_fds|process_virtual_memory_bytes/);
  assert.doesNotMatch(text, /NaN/);
});

Deno.test("virtualMemoryFromStat() and maxFdsFromLimits() read the kernel's formats", () => {
  assert.equal(virtualMemoryFromStat(STAT), 2147483648);
  assert.equal(virtualMemoryFromStat("1 (a) b) S" + " 0".repeat(19) + " 77"), 77);
  assert.equal(maxFdsFromLimits("Limit  Soft  Hard\nMax open files  65536  65536  files\n"), 65536);
  assert.equal(maxFdsFromLimits("nothing"), null);
});
