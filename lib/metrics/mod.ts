/** Public face of lib/metrics: kube-proxy's prom-client metrics. */
export * from "./proxy_metrics.ts";
export * from "./process_metrics.ts";
export * from "./mode_metric_builders.ts";
export type { Registry } from "./prom.ts";
