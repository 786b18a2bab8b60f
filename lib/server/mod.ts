/** Public face of lib/server: the health and metrics HTTP servers. */
export { createHealthHandler, createMetricsHandler, isNodeEligible } from "./handlers.ts";
export { createProxyHealth, type ProxyHealth } from "./proxy_health.ts";
export { BindFailure, serveOn } from "./serve.ts";
export {
  bindableHealthCheckAddresses,
  healthCheckAddresses,
  serviceHealthTargets,
  unpermittedHealthCheckMessage,
} from "./service_health.ts";
export { createServiceHealthServer } from "./service_health_server.ts";
