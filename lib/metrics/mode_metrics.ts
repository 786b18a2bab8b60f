/**
 * The metrics each proxy mode registers besides the core set, as upstream's RegisterMetrics
 * switches on the mode: iptables its restore counters, rule gauge and full/partial latencies;
 * ipvs only the restore-failure counter; nftables its sync and cleanup failure counters.
 */
import type { Registry } from "./prom.ts";
import type { BackendMetrics } from "../backends/backend.ts";
import type { IPFamily } from "../proxy/mod.ts";
import { metricBuilders, SYNC_DURATION_BUCKETS } from "./proxy_metrics.ts";

/** The proxy modes, by the names `--proxy-mode` takes. */
export type MetricsMode = "iptables" | "ipvs" | "nftables";

/** Gives each family's backend its metrics, labelled with that family. */
export type BackendMetricsFor = (family: IPFamily) => BackendMetrics;

type Builders = ReturnType<typeof metricBuilders>;

const restoreFailures = (b: Builders) =>
  b.counter(
    "sync_proxy_rules_iptables_restore_failures_total",
    "Cumulative proxy iptables restore failures",
    b.family,
  );

function iptablesMetrics(b: Builders): BackendMetricsFor {
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
  return (ip_family) => {
    for (const c of [restore, partialRestore]) c.inc({ ip_family }, 0);
    for (const h of [full, partial]) h.zero({ ip_family });
    return {
      applyFailed(isFull) {
        restore.inc({ ip_family });
        if (!isFull) partialRestore.inc({ ip_family });
      },
      cleanupFailed() {},
      synced(report, seconds) {
        (report.full ? full : partial).observe({ ip_family }, seconds);
        for (const [table, n] of Object.entries(report.counts)) {
          rulesTotal.set({ ip_family, table }, n);
        }
      },
    };
  };
}

function ipvsMetrics(b: Builders): BackendMetricsFor {
  const restore = restoreFailures(b);
  return (ip_family) => {
    restore.inc({ ip_family }, 0);
    return {
      applyFailed: () => restore.inc({ ip_family }),
      cleanupFailed() {},
      synced() {},
    };
  };
}

function nftablesMetrics(b: Builders): BackendMetricsFor {
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
    return {
      applyFailed: () => syncFailures.inc({ ip_family }),
      cleanupFailed: () => cleanupFailures.inc({ ip_family }),
      synced() {},
    };
  };
}

const MODE_METRICS: Readonly<Record<MetricsMode, (b: Builders) => BackendMetricsFor>> = {
  iptables: iptablesMetrics,
  ipvs: ipvsMetrics,
  nftables: nftablesMetrics,
};

/**
 * Registers `mode`'s own metrics on `registry`. Each call of the result gives one family's
 * backend its handles and makes that family's series present at 0.
 */
export function createModeMetrics(registry: Registry, mode: MetricsMode): BackendMetricsFor {
  return MODE_METRICS[mode](metricBuilders(registry));
}
