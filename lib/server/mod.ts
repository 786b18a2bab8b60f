/** Public face of lib/server: the health and metrics HTTP servers. */
export * from "./handlers.ts";
export * from "./serve.ts";
export * from "./service_health.ts";
export * from "./service_health_server.ts";
export * from "./proxy_health.ts";
