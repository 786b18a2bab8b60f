/** Public face of lib/conntrack: stale UDP flow cleanup through conntrack-tools. */
export * from "./stale_udp.ts";
export * from "./tuning.ts";
