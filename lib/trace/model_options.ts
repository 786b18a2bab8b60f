/**
 * What the reference model needs to know besides the ProxyState: the mode (where IPVS and
 * nftables differ from iptables) and the configuration resolved for one family (masquerade,
 * local-traffic detection, NodePort addresses, the node's local addresses). Pure.
 */
import { commonRenderOptions, type ProxyConfig, type ProxyModeName } from "../config/mod.ts";
import {
  cidrContains,
  cidrString,
  isLoopbackIP,
  parseCIDR,
  resolveNodePortAddresses,
  selectNodePortIPs,
} from "../net/mod.ts";
import type { IPFamily, ProxyState } from "../proxy/mod.ts";

/** How traffic from this cluster's pods is recognised (`--detect-local-mode`). */
export type PodTrafficMatch =
  /** The source address lies in this CIDR (ClusterCIDR, NodeCIDR). */
  | { readonly cidr: string }
  /** The packet came in through a pod interface (BridgeInterface, InterfaceNamePrefix). */
  | "interface"
  /** No detector of the family: nothing depends on locality. */
  | null;

/** The model's settings for one mode and one family. */
export interface ModelOptions {
  readonly mode: ProxyModeName;
  readonly family: IPFamily;
  readonly masqueradeAll: boolean;
  readonly podTraffic: PodTrafficMatch;
  /** Addresses NodePorts are served on; null = every local address (see localhostNodePorts). */
  readonly nodePortIPs: readonly string[] | null;
  /** 127.0.0.0/8 serves NodePorts (iptables mode, IPv4, localhostNodePorts). */
  readonly localhostNodePorts: boolean;
  /** Every address local to the node in this family, loopback included. */
  readonly localAddresses: readonly string[];
  /** The node's IPs of this family (source ranges that contain one admit the LB IPs). */
  readonly nodeIPs: readonly string[];
}

/** True when `ip` lies in the CIDR text `cidr`. */
export function inCIDR(cidr: string, ip: string): boolean {
  const c = parseCIDR(cidr);
  return c !== null && cidrContains(c, ip);
}

function podTrafficOf(config: ProxyConfig, state: ProxyState): PodTrafficMatch {
  const common = commonRenderOptions(config, state.family);
  switch (common.detectLocalMode) {
    case "ClusterCIDR":
    case "NodeCIDR": {
      const cidrs = common.detectLocalMode === "ClusterCIDR"
        ? common.clusterCIDRs
        : state.node.podCIDRs;
      for (const raw of cidrs) {
        const c = parseCIDR(raw.trim());
        if (c !== null && c.family === state.family) return { cidr: cidrString(c) };
      }
      return null;
    }
    case "BridgeInterface":
      return common.bridgeInterface === "" ? null : "interface";
    case "InterfaceNamePrefix":
      return common.interfaceNamePrefix === "" ? null : "interface";
  }
}

/**
 * The model's options for `mode` from the configuration and the state's family.
 * `localAddresses` are the node's addresses of that family (loopback included); when empty,
 * the state's node IPs plus loopback stand in, as `render` assumes.
 */
export function modelOptions(
  config: ProxyConfig,
  state: ProxyState,
  localAddresses: readonly string[] = [],
  mode: ProxyModeName = config.mode,
): ModelOptions {
  const family = state.family;
  const nodeIPs = state.node.ips;
  const local = localAddresses.length > 0
    ? localAddresses
    : [...nodeIPs, family === "IPv4" ? "127.0.0.1" : "::1"];
  const common = commonRenderOptions(config, family);
  // nftables defaults to the primary node IP (upstream's platformApplyDefaults).
  const entries = mode === "nftables" && config.nodePortAddresses.length === 0
    ? ["primary"]
    : common.nodePortAddresses;
  const npa = resolveNodePortAddresses(entries, family, nodeIPs[0]);
  const localhostNodePorts = mode === "iptables" && family === "IPv4" &&
    config.iptables.localhostNodePorts && npa.containsIPv4Loopback;
  let nodePortIPs: string[] | null = null;
  if (!npa.matchAll) {
    nodePortIPs = selectNodePortIPs(npa, local).filter((ip) =>
      localhostNodePorts || !isLoopbackIP(ip)
    );
  } else if (mode === "ipvs") {
    // IPVS makes one virtual server per node address; loopback is never one.
    nodePortIPs = local.filter((ip) => !isLoopbackIP(ip));
  }
  return {
    mode,
    family,
    masqueradeAll: config.masqueradeAll,
    podTraffic: podTrafficOf(config, state),
    nodePortIPs,
    localhostNodePorts,
    localAddresses: local,
    nodeIPs,
  };
}
