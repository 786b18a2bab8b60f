/** nftables mode's own metrics: sync and cleanup failure counters, full/partial sync latencies. */
import {
  metricBuilders,
  perFamily,
  type Registry,
  syncLatencyHistograms,
} from "../../metrics/mod.ts";
import type { BackendMetricsFor } from "../mode.ts";

/** Registers nftables mode's metrics on `registry`; each call of the result serves one family. */
export function registerNftablesMetrics(registry: Registry): BackendMetricsFor {
  const b = metricBuilders(registry);
  const latencies = syncLatencyHistograms(b);
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
  return perFamily([syncFailures, cleanupFailures], latencies, (ip_family) => ({
    applyFailed: () => syncFailures.inc({ ip_family }),
    cleanupFailed: () => cleanupFailures.inc({ ip_family }),
    synced: (report, seconds) => latencies.observe(ip_family, report.full, seconds),
  }));
}
