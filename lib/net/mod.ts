/** Public face of lib/net: strict IP and CIDR helpers. */
export {
  canonicalIP,
  type CIDR,
  cidrContains,
  cidrString,
  type IPFamily,
  ipFamily,
  isIP,
  joinHostPort,
  parseCIDR,
  parseIPv4,
  parseIPv6,
} from "./ip.ts";
export {
  ipCommandAddressLister,
  type LocalAddressLister,
  parseIpAddrJson,
} from "./local_addresses.ts";
export {
  isLoopbackIP,
  resolveNodePortAddresses,
  selectNodePortIPs,
} from "./node_port_addresses.ts";
