/** Public face of lib/trace/iptables: the iptables-mode tracer. */
export * from "./tracer.ts";
