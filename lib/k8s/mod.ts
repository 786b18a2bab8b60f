/** Public face of lib/k8s: the API-server client, its list+watch loops and the API source. */
export * from "./api_errors.ts";
export * from "./backoff.ts";
export * from "./rate_limiter.ts";
export * from "./kube_config.ts";
export * from "./client_config.ts";
export * from "./token_file.ts";
export * from "./transport.ts";
export * from "./watch_lines.ts";
export * from "./resources.ts";
export * from "./relist_diff.ts";
export * from "./reflector.ts";
export * from "./start_event.ts";
export * from "./api_source.ts";
