/** Public face of lib/backends/iptables: the renderer, the applier, flavour detection, cleanup. */
export * from "./chain_name_cache.ts";
export * from "./chain_names.ts";
export * from "./cleanup.ts";
export * from "./flavour.ts";
export * from "./jump_chains.ts";
export * from "./local_detector.ts";
export * from "./nfacct.ts";
export * from "./proxier.ts";
export * from "./render.ts";
export * from "./render_endpoints.ts";
export * from "./render_options.ts";
export * from "./render_service.ts";
export * from "./render_service_chains.ts";
export * from "./restore_payload.ts";
export * from "./rule_buffer.ts";
export * from "./top_level_chains.ts";
export * from "./mode.ts";
