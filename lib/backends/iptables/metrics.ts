/**
 * iptables mode's own metrics, as upstream's RegisterMetrics registers them for it: the restore
 * failure counters, the rule gauges, full/partial sync latencies and the nfacct packet counters.
 */
import { type Logger, silentLogger } from "../../log/mod.ts";
import {
  metricBuilders,
  perFamily,
  type Registry,
  restoreFailureCounter,
  syncLatencyHistograms,
} from "../../metrics/mod.ts";
import type { BackendMetricsFor, ModeMetricsExtras, PacketCounters } from "../mode.ts";

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

/** Registers iptables mode's metrics on `registry`; each call of the result serves one family. */
export function registerIptablesMetrics(
  registry: Registry,
  extras: ModeMetricsExtras,
): BackendMetricsFor {
  const b = metricBuilders(registry);
  if (extras.packetCounters !== undefined) {
    registerPacketCounters(registry, extras.packetCounters, extras.logger ?? silentLogger);
  }
  const restore = restoreFailureCounter(b);
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
  const latencies = syncLatencyHistograms(b);
  return perFamily([restore, partialRestore], latencies, (ip_family) => ({
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
  }));
}
