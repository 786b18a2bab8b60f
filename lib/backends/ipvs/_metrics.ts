/** IPVS mode's own metrics: upstream's restore-failure counter and our drain-check failures. */
import {
  type MetricBuilders,
  metricBuilders,
  type Registry,
  restoreFailureCounter,
} from "../../metrics/mod.ts";
import type { BackendMetricsFor } from "../mod.ts";

function ipvsMetrics(b: MetricBuilders): BackendMetricsFor {
  const restore = restoreFailureCounter(b);
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

/** Registers IPVS mode's metrics on `registry`; each call of the result serves one family. */
export function registerIpvsMetrics(registry: Registry): BackendMetricsFor {
  return ipvsMetrics(metricBuilders(registry));
}
