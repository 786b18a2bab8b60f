/** IPVS mode's own metrics: upstream's restore-failure counter and our drain-check failures. */
import {
  metricBuilders,
  perFamily,
  type Registry,
  restoreFailureCounter,
} from "../../metrics/mod.ts";
import type { BackendMetricsFor } from "../mode.ts";

/** Registers IPVS mode's metrics on `registry`; each call of the result serves one family. */
export function registerIpvsMetrics(registry: Registry): BackendMetricsFor {
  const b = metricBuilders(registry);
  const restore = restoreFailureCounter(b);
  // Ours: upstream only logs a failed check of the real servers it is draining.
  const drainCheck = b.counter(
    "ipvs_graceful_termination_failures_total",
    "IPVS graceful termination checks that failed (draining real servers are checked again)",
    b.family,
  );
  return perFamily([restore, drainCheck], null, (ip_family) => ({
    applyFailed: () => restore.inc({ ip_family }),
    cleanupFailed: () => drainCheck.inc({ ip_family }),
    synced() {},
  }));
}
