/** Public face of lib/backends/ipvs: desired state, diffs, parsers, rules, the mode and `--cleanup`. */
export * from "./address_diff.ts";
export * from "./cleanup.ts";
export * from "./desired_state.ts";
export * from "./drain_check_interval.ts";
export * from "./graceful_termination.ts";
export * from "./ipset_diff.ts";
export * from "./ipset_names.ts";
export * from "./ipset_parser.ts";
export * from "./ipset_specs.ts";
export * from "./ipvs_diff.ts";
export * from "./ipvs_options.ts";
export * from "./ipvsadm_parser.ts";
export * from "./leftovers.ts";
export * from "./link_addresses.ts";
export * from "./mode.ts";
export * from "./proxier.ts";
export * from "./render.ts";
export * from "./render_iptables.ts";
export * from "./virtual_server.ts";
export * from "./metrics.ts";
export * from "./tracer.ts";
export {
  type IpvsRules,
  ipvsServiceNames,
  readIpvsRules,
  renderedIpvsRules,
} from "./trace_rules.ts";
