/** Public face of lib/net: strict IP and CIDR helpers. */
export * from "./ip.ts";
