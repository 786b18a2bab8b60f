/** Public face of lib/trace/iptables: the iptables-mode tracer. */
export * from "./compile.ts";
export * from "./rules.ts";
export * from "./walk.ts";
export * from "./tracer.ts";
