/** Public face of lib/metrics: kube-proxy's prom-client metrics. */
export { perFamily, restoreFailureCounter, syncLatencyHistograms } from "./mode_metric_builders.ts";
export { registerProcessMetrics } from "./process_metrics.ts";
export { Registry } from "./prom.ts";
export { createProxyMetrics, metricBuilders, type ProxyMetrics } from "./proxy_metrics.ts";
