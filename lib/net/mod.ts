/** Public face of lib/net: strict IP and CIDR helpers. */
export * from "./ip.ts";
export * from "./node_port_addresses.ts";
export * from "./local_addresses.ts";
