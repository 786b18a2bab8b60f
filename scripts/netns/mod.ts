/** Public face of scripts/netns: real-kernel test topologies for e2e tests and the demo. */
export * from "./echo_line.ts";
export * from "./host_port.ts";
export * from "./namespaces.ts";
export * from "./netstat.ts";
export * from "./plan.ts";
export * from "./probe_types.ts";
export * from "./process.ts";
export * from "./proxy_program.ts";
export * from "./time_scale.ts";
export * from "./topology.ts";
