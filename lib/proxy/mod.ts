/** Public face of lib/proxy: the data model, change trackers and endpoint selection. */
export * from "./types.ts";
export * from "./validation_rules.ts";
export * from "./deep_equal.ts";
export * from "./service_port.ts";
export * from "./validate_service.ts";
export * from "./validate_endpoint_slice.ts";
export * from "./node_status.ts";
export * from "./service_cidrs.ts";
export * from "./endpoint_slice_cache.ts";
export * from "./pending_changes.ts";
export * from "./topology.ts";
export * from "./proxy_tracker.ts";
