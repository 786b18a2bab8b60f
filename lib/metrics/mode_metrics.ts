/**
 * The metrics each proxy mode registers besides the core set, as upstream's RegisterMetrics
 * switches on the mode: iptables its restore counters, rule gauges, full/partial latencies and
 * the nfacct packet counters; ipvs only the restore-failure counter; nftables its sync and
 * cleanup failure counters and full/partial latencies.
 */
import type { Registry } from "./prom.ts";
import type { BackendMetrics } from "../backends/backend.ts";
import type { PacketCounters } from "../backends/mode.ts";
import { type Logger, silentLogger } from "../log/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";
import type { ProxyModeName } from "../config/mod.ts";
import { metricBuilders, SYNC_DURATION_BUCKETS } from "./proxy_metrics.ts";

/** Gives each family's backend its metrics, labelled with that family. */
export type BackendMetricsFor = (family: IPFamily) => BackendMetrics;

type Builders = ReturnType<typeof metricBuilders>;

const restoreFailures = (b: Builders) =>
  b.counter(
    "sync_proxy_rules_iptables_restore_failures_total",
    "Cumulative proxy iptables restore failures",
    b.family,
  );

/** Full and partial sync latencies, as iptables and nftables mode register them. */
function syncLatencies(b: Builders) {
  const full = b.hist(
    "sync_full_proxy_rules_duration_seconds",
    "SyncProxyRules latency in seconds for full resyncs",
    SYNC_DURATION_BUCKETS,
  );
  const partial = b.hist(
    "sync_partial_proxy_rules_duration_seconds",
    "SyncProxyRules latency in seconds for partial resyncs",
    SYNC_DURATION_BUCKETS,
  );
  return {
    zero(ip_family: IPFamily): void {
      for (const h of [full, partial]) h.zero({ ip_family });
    },
    observe(ip_family: IPFamily, isFull: boolean, seconds: number): void {
      (isFull ? full : partial).observe({ ip_family }, seconds);
    },
  };
}

/**
 * Upstream's nfacct-backed counters in iptables mode: the metric and the nfacct object whose
 * packet count it reports.
 */
export const NFACCT_METRICS: readonly { metric: string; help: string; counter: string }[] = [
  {
    metric: "kubeproxy_iptables_ct_state_invalid_dropped_packets_total",
    help: "packets dropped by iptables to work around conntrack problems",
    counter: "ct_state_invalid_dropped_pkts",
  },
  {
    metric: "kubeproxy_iptables_localhost_nodeports_accepted_packets_total",
    help: "Number of packets accepted on nodeports of loopback interface",
    counter: "localhost_nps_accepted_pkts",
  },
];

/** A scrape reads the counters once for both metrics: reads this close together are shared. */
const PACKET_COUNTER_READ_SHARED_MS = 1_000;

/**
 * Registers the nfacct-backed counters, read from the kernel at scrape time. Like upstream's
 * collector, a counter that cannot be read (object missing, nfacct failing) is logged and
 * exposes no sample rather than a wrong one.
 */
function registerPacketCounters(registry: Registry, counters: PacketCounters, logger: Logger) {
  let shared: { at: number; read: Promise<ReadonlyMap<string, number>> } | undefined;
  const read = () => {
    const now = performance.now();
    if (shared === undefined || now - shared.at > PACKET_COUNTER_READ_SHARED_MS) {
      shared = { at: now, read: counters.read() };
    }
    return shared.read;
  };
  for (const { metric, help, counter } of NFACCT_METRICS) {
    registry.registerMetric(
      {
        name: metric,
        help,
        labelNames: [],
        async get() {
          let values: { value: number; labels: Record<string, string> }[] = [];
          try {
            const packets = (await read()).get(counter);
            if (packets === undefined) throw new Error(`No nfacct object "${counter}"`);
            values = [{ value: packets, labels: {} }];
          } catch (err) {
            logger.error("Failed to collect nfacct counter", { counter, err });
          }
          return { name: metric, help, type: "counter", values, aggregator: "sum" };
        },
        reset() {},
      } as unknown as Parameters<Registry["registerMetric"]>[0],
    );
  }
}

function iptablesMetrics(b: Builders, extras: ModeMetricsExtras): BackendMetricsFor {
  if (extras.packetCounters !== undefined) {
    registerPacketCounters(b.registry, extras.packetCounters, extras.logger ?? silentLogger);
  }
  const restore = restoreFailures(b);
  const partialRestore = b.counter(
    "sync_proxy_rules_iptables_partial_restore_failures_total",
    "Cumulative proxy iptables partial restore failures",
    b.family,
  );
  const rulesTotal = b.gauge(
    "sync_proxy_rules_iptables_total",
    "Total number of iptables rules owned by kube-proxy",
    ["ip_family", "table"],
  );
  // Set from what each applied restore wrote: a partial sync's input carries only what changed.
  const rulesLast = b.gauge(
    "sync_proxy_rules_iptables_last",
    "Number of iptables rules written by kube-proxy in last sync",
    ["ip_family", "table"],
  );
  const latencies = syncLatencies(b);
  return (ip_family) => {
    for (const c of [restore, partialRestore]) c.inc({ ip_family }, 0);
    latencies.zero(ip_family);
    return {
      applyFailed(isFull) {
        restore.inc({ ip_family });
        if (!isFull) partialRestore.inc({ ip_family });
      },
      cleanupFailed() {},
      synced(report, seconds) {
        latencies.observe(ip_family, report.full, seconds);
        for (const [table, n] of Object.entries(report.counts)) {
          rulesTotal.set({ ip_family, table }, n);
        }
        for (const [table, n] of Object.entries(report.written ?? {})) {
          rulesLast.set({ ip_family, table }, n);
        }
      },
    };
  };
}

function ipvsMetrics(b: Builders): BackendMetricsFor {
  const restore = restoreFailures(b);
  // Ours: upstream only logs a failed check of the real servers it is draining.
  const drainCheck = b.counter(
    "ipvs_graceful_termination_failures_total",
    "IPVS graceful termination checks that failed (draining real servers are checked again)",
    b.family,
  );
  return (ip_family) => {
    restore.inc({ ip_family }, 0);
    drainCheck.inc({ ip_family }, 0);
    return {
      applyFailed: () => restore.inc({ ip_family }),
      cleanupFailed: () => drainCheck.inc({ ip_family }),
      synced() {},
    };
  };
}

function nftablesMetrics(b: Builders): BackendMetricsFor {
  const latencies = syncLatencies(b);
  const syncFailures = b.counter(
    "sync_proxy_rules_nftables_sync_failures_total",
    "Cumulative proxy nftables sync failures",
    b.family,
  );
  const cleanupFailures = b.counter(
    "sync_proxy_rules_nftables_cleanup_failures_total",
    "Cumulative proxy nftables cleanup failures",
    b.family,
  );
  return (ip_family) => {
    for (const c of [syncFailures, cleanupFailures]) c.inc({ ip_family }, 0);
    latencies.zero(ip_family);
    return {
      applyFailed: () => syncFailures.inc({ ip_family }),
      cleanupFailed: () => cleanupFailures.inc({ ip_family }),
      synced: (report, seconds) => latencies.observe(ip_family, report.full, seconds),
    };
  };
}

/** What some modes' metrics read besides the backends' reports. */
export interface ModeMetricsExtras {
  /** The kernel's packet counters (iptables mode: nfacct); absent where the node has none. */
  readonly packetCounters?: PacketCounters;
  /** Where a counter that cannot be read is reported. */
  readonly logger?: Logger;
}

const MODE_METRICS: Readonly<
  Record<ProxyModeName, (b: Builders, extras: ModeMetricsExtras) => BackendMetricsFor>
> = {
  iptables: iptablesMetrics,
  ipvs: ipvsMetrics,
  nftables: nftablesMetrics,
};

/**
 * Registers `mode`'s own metrics on `registry`. Each call of the result gives one family's
 * backend its handles and makes that family's series present at 0.
 */
export function createModeMetrics(
  registry: Registry,
  mode: ProxyModeName,
  extras: ModeMetricsExtras = {},
): BackendMetricsFor {
  return MODE_METRICS[mode](metricBuilders(registry), extras);
}
