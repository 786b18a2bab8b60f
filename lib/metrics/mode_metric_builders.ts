/**
 * The builders mode metrics share, as upstream's RegisterMetrics registers them for more than
 * one mode: the restore-failure counter (iptables and ipvs) and the full/partial sync latencies
 * (iptables and nftables). Each mode's own set is registered in its folder (lib/backends/<mode>/).
 */
import type { IPFamily } from "../proxy/mod.ts";
import type { Counter } from "./prom.ts";
import { metricBuilders, SYNC_DURATION_BUCKETS } from "./proxy_metrics.ts";

/** Builders of `kubeproxy_` metrics on one registry, as a mode's metrics get them. */
export type MetricBuilders = ReturnType<typeof metricBuilders>;

/** The iptables-restore failure counter, per family. */
export function restoreFailureCounter(b: MetricBuilders) {
  return b.counter(
    "sync_proxy_rules_iptables_restore_failures_total",
    "Cumulative proxy iptables restore failures",
    b.family,
  );
}

/** Full and partial sync latencies, as iptables and nftables mode register them. */
export function syncLatencyHistograms(b: MetricBuilders) {
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

/** Full and partial sync latencies of one registry, as syncLatencyHistograms makes them. */
export type SyncLatencyHistograms = ReturnType<typeof syncLatencyHistograms>;

/**
 * Gives each family's backend the handles `handlesOf` makes, after making that family's series
 * of `counters` and `latencies` present at 0, as upstream's are from the start.
 */
export function perFamily<T>(
  counters: readonly Counter<"ip_family">[],
  latencies: SyncLatencyHistograms | null,
  handlesOf: (ip_family: IPFamily) => T,
): (ip_family: IPFamily) => T {
  return (ip_family) => {
    for (const c of counters) c.inc({ ip_family }, 0);
    latencies?.zero(ip_family);
    return handlesOf(ip_family);
  };
}
