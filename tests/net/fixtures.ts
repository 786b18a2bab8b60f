/** Shared fixtures of the lib/net tests. */

/** Trimmed `ip -json addr show` output of a node with a second address on eth0. */
export const IP_ADDR_JSON = JSON.stringify([
  { ifname: "lo", addr_info: [{ family: "inet", local: "127.0.0.1" }] },
  {
    ifname: "eth0",
    addr_info: [
      { family: "inet", local: "192.168.0.2" },
      { family: "inet", local: "198.51.100.2" },
      { family: "inet6", local: "fd00:192:0::2" },
    ],
  },
  { ifname: "veth0" },
]);
