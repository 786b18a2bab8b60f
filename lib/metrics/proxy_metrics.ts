/**
 * kube-proxy's metrics under their upstream names, types, labels and buckets, registered on a
 * registry the caller passes in (no hidden global registry).
 */
import { Counter, Gauge, Histogram, type Registry } from "./prom.ts";
import type { IPFamily } from "../proxy/mod.ts";

/** Upstream's sync-duration buckets: 0.001 x 2^k, 15 buckets. */
export const SYNC_DURATION_BUCKETS: readonly number[] = Array.from(
  { length: 15 },
  (_, k) => 0.001 * 2 ** k,
);

/**
 * Upstream's network-programming-duration buckets: 0 (upstream's merge() starts from a zero
 * bucket), 0.25s, 0.5s, 1..59s, 60..115s by 5, 2..5min by 30s.
 */
export const NETWORK_PROGRAMMING_BUCKETS: readonly number[] = [
  0,
  0.25,
  0.5,
  ...Array.from({ length: 59 }, (_, i) => 1 + i),
  ...Array.from({ length: 12 }, (_, i) => 60 + 5 * i),
  ...Array.from({ length: 7 }, (_, i) => 120 + 30 * i),
];

/**
 * The core kube-proxy metrics every mode registers (upstream's RegisterMetrics before its
 * per-mode switch; lib/metrics/mode_metrics.ts has the rest). Since v1.33 upstream labels the
 * per-family ones with `ip_family` ("IPv4" / "IPv6"), because each family has its own proxier.
 */
export interface ProxyMetrics {
  readonly syncDuration: Histogram<"ip_family">;
  readonly networkProgrammingDuration: Histogram<"ip_family">;
  readonly lastSyncTimestamp: Gauge<"ip_family">;
  readonly lastQueuedTimestamp: Gauge<"ip_family">;
  readonly noLocalEndpoints: Gauge<"ip_family" | "traffic_policy">;
  readonly endpointChangesPending: Gauge;
  readonly serviceChangesPending: Gauge;
  readonly endpointChangesTotal: Counter;
  readonly serviceChangesTotal: Counter;
  readonly healthzTotal: Counter<"code">;
  readonly livezTotal: Counter<"code">;
  readonly conntrackDeleted: Counter<"ip_family">;
  /** How long one conntrack reconcile took (after every sync, in every mode). */
  readonly conntrackReconcileDuration: Histogram<"ip_family">;
  /** Ours: conntrack reconciles whose listing or deletion failed or printed unreadable lines. */
  readonly conntrackReconcileFailures: Counter<"ip_family">;
  /** Ours: objects from the API or a manifest that failed validation and were skipped. */
  readonly invalidObjects: Counter<"kind">;
  /** Ours: re-reads of a kubeconfig token file that failed (the previous token stays in use). */
  readonly tokenFileReadFailures: Counter;
  /** Ours: API watch events whose handling threw (handed on again at the next list). */
  readonly watchHandlerFailures: Counter<"kind">;
  /** Ours: failures of the `--config` file watch (it is started again). */
  readonly configWatchFailures: Counter;
  /**
   * Makes every counter and histogram whose labels are known at start present at 0 for these
   * families, so the first scrape already has the series `rate()` and alerts need.
   */
  primeFamilies(families: readonly IPFamily[]): void;
}

/** Builders of `kubeproxy_` metrics on one registry; `family` is the `ip_family` label list. */
export function metricBuilders(registry: Registry) {
  const registers = [registry];
  const named = <L extends string>(name: string, help: string, labelNames: readonly L[]) => ({
    name: `kubeproxy_${name}`,
    help,
    labelNames,
    registers,
  });
  return {
    registry,
    family: ["ip_family"] as const,
    hist: (name: string, help: string, buckets: readonly number[]) =>
      new Histogram({ ...named(name, help, ["ip_family"] as const), buckets: [...buckets] }),
    gauge: <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Gauge(named(name, help, labelNames)),
    counter: <L extends string>(name: string, help: string, labelNames: readonly L[] = []) =>
      new Counter(named(name, help, labelNames)),
  };
}

/** The kinds of object a source delivers (the labels of invalid_objects_total). */
const OBJECT_KINDS = ["Service", "EndpointSlice", "Node", "ServiceCIDR"] as const;

/** Registers the core metrics on `registry` and returns handles to them. */
export function createProxyMetrics(registry: Registry): ProxyMetrics {
  const { family, hist, gauge, counter } = metricBuilders(registry);
  const m = {
    syncDuration: hist(
      "sync_proxy_rules_duration_seconds",
      "SyncProxyRules latency in seconds",
      SYNC_DURATION_BUCKETS,
    ),
    networkProgrammingDuration: hist(
      "network_programming_duration_seconds",
      "In Cluster Network Programming Latency in seconds",
      NETWORK_PROGRAMMING_BUCKETS,
    ),
    lastSyncTimestamp: gauge(
      "sync_proxy_rules_last_timestamp_seconds",
      "The last time proxy rules were successfully synced",
      family,
    ),
    lastQueuedTimestamp: gauge(
      "sync_proxy_rules_last_queued_timestamp_seconds",
      "The last time a sync of proxy rules was queued",
      family,
    ),
    noLocalEndpoints: gauge(
      "sync_proxy_rules_no_local_endpoints_total",
      "Number of services with a Local traffic policy and no endpoints",
      ["ip_family", "traffic_policy"],
    ),
    endpointChangesPending: gauge(
      "sync_proxy_rules_endpoint_changes_pending",
      "Pending proxy rules Endpoint changes",
    ),
    serviceChangesPending: gauge(
      "sync_proxy_rules_service_changes_pending",
      "Pending proxy rules Service changes",
    ),
    endpointChangesTotal: counter(
      "sync_proxy_rules_endpoint_changes_total",
      "Cumulative proxy rules Endpoint changes",
    ),
    serviceChangesTotal: counter(
      "sync_proxy_rules_service_changes_total",
      "Cumulative proxy rules Service changes",
    ),
    healthzTotal: counter("proxy_healthz_total", "Cumulative proxy healthz HTTP status", ["code"]),
    livezTotal: counter("proxy_livez_total", "Cumulative proxy livez HTTP status", ["code"]),
    conntrackDeleted: counter(
      "conntrack_reconciler_deleted_entries_total",
      "Cumulative conntrack flows deleted by conntrack reconciler",
      family,
    ),
    conntrackReconcileDuration: hist(
      "conntrack_reconciler_sync_duration_seconds",
      "ReconcileConntrackFlowsLatency latency in seconds",
      SYNC_DURATION_BUCKETS,
    ),
    conntrackReconcileFailures: counter(
      "conntrack_reconciler_failures_total",
      "Conntrack reconciles that failed or read unexpected conntrack output; nothing unattributed is deleted",
      family,
    ),
    invalidObjects: counter(
      "invalid_objects_total",
      "Objects from the API server or manifests skipped because they failed validation",
      ["kind"],
    ),
    tokenFileReadFailures: counter(
      "token_file_read_failures_total",
      "Re-reads of the kubeconfig token file that failed; the previous token stays in use",
    ),
    watchHandlerFailures: counter(
      "watch_event_handler_failures_total",
      "API watch events whose handling failed; the object is handed on again at the next list",
      ["kind"],
    ),
    configWatchFailures: counter(
      "config_watch_failures_total",
      "Failures of the watch on the --config file; the watch is started again",
    ),
  };
  return {
    ...m,
    primeFamilies(families) {
      for (const kind of OBJECT_KINDS) {
        m.invalidObjects.inc({ kind }, 0);
        m.watchHandlerFailures.inc({ kind }, 0);
      }
      for (const ip_family of families) {
        for (
          const h of [m.syncDuration, m.networkProgrammingDuration, m.conntrackReconcileDuration]
        ) {
          h.zero({ ip_family });
        }
        m.conntrackDeleted.inc({ ip_family }, 0);
        m.conntrackReconcileFailures.inc({ ip_family }, 0);
        for (const traffic_policy of ["internal", "external"]) {
          m.noLocalEndpoints.set({ ip_family, traffic_policy }, 0);
        }
      }
    },
  };
}
