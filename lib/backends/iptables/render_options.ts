/**
 * The knobs of the iptables renderer and their resolution into the concrete pieces rules are
 * made of (mark text, local-traffic matches, NodePort destinations). Pure: no I/O here.
 */
import { isLoopbackIP, resolveNodePortAddresses, selectNodePortIPs } from "../../net/mod.ts";
import { masqueradeMarkText } from "../common/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import type { ChainNameCache } from "./chain_name_cache.ts";
import {
  type LocalDetectOptions,
  localDetectorFor,
  localTrafficDetector,
} from "../../netfilter/mod.ts";
import {
  CT_STATE_INVALID_DROPPED_COUNTER,
  LOCALHOST_NODEPORTS_ACCEPTED_COUNTER,
} from "./nfacct.ts";
import { commonRenderOptions, type ProxyConfig } from "../../config/mod.ts";

/** What the renderer needs besides the ProxyState; every field has upstream's default. */
export interface IptablesRenderOptions extends LocalDetectOptions {
  /** Bit of the packet mark that flags traffic for masquerade (default 14, i.e. 0x4000). */
  readonly masqueradeBit?: number;
  /** Masquerade all traffic sent to cluster IPs (--masquerade-all). */
  readonly masqueradeAll?: boolean;
  /** Allow NodePorts on 127.0.0.0/8 (IPv4 only; default true). */
  readonly localhostNodePorts?: boolean;
  /** --nodeport-addresses: CIDRs or "primary"; empty means every local address. */
  readonly nodePortAddresses?: readonly string[];
  /**
   * This node's addresses, to resolve nodePortAddresses CIDRs into IPs (upstream reads the
   * interfaces). Defaults to state.node.ips plus the family's loopback address.
   */
  readonly localAddresses?: readonly string[];
  /** Add `--random-fully` to the MASQUERADE rule (default true; kernels since 3.13 have it). */
  readonly randomFully?: boolean;
  /** nf_conntrack_tcp_be_liberal is set, so INVALID packets must not be dropped. */
  readonly conntrackTCPLiberal?: boolean;
  /**
   * The nfacct objects this node has (see nfacct.ts): the rules that feed one get its
   * `-m nfacct --nfacct-name NAME` match. Default none, so `render` and nodes without nfacct
   * get rules without it.
   */
  readonly nfacctCounters?: ReadonlySet<string>;
  /**
   * Memo of chain-name hashes, kept across renders by a proxier; default a fresh cache per
   * render. It never changes the output, only how often SHA-256 runs.
   */
  readonly chainNames?: ChainNameCache;
}

/** The options resolved against one state's family: what the rule writers consume. */
export interface ResolvedRenderConfig {
  readonly family: IPFamily;
  /** `0x00004000`-style text, as upstream formats it with Go's `%#08x`. */
  readonly masqueradeMark: string;
  readonly masqueradeAll: boolean;
  /** Matches pod-sourced traffic (`-s cidr`, `-i bridge`, `-i prefix+`), or null if unknown. */
  readonly ifLocal: readonly string[] | null;
  /** Matches traffic from outside the pod network (the negation), or null if unknown. */
  readonly ifNotLocal: readonly string[] | null;
  readonly localhostNodePorts: boolean;
  readonly randomFully: boolean;
  readonly conntrackTCPLiberal: boolean;
  /** The INVALID-state drop rule counts into the ct_state_invalid_dropped_pkts nfacct object. */
  readonly countInvalidDropped: boolean;
  /**
   * Each NodePort gets a 127.0.0.0/8 rule ahead of its own that counts into the
   * localhost_nps_accepted_pkts nfacct object (IPv4 with localhost NodePorts only).
   */
  readonly countLocalhostNodePorts: boolean;
  /** null = NodePorts on every local address; otherwise the node IPs they are bound to. */
  readonly nodePortIPs: readonly string[] | null;
  /** The node's IPs of this family (loadBalancerSourceRanges allow-from-node check). */
  readonly nodeIPs: readonly string[];
}

const IPV4_LOOPBACK = "127.0.0.1";

/** Resolves options for one family: picks the local-traffic matches and NodePort addresses. */
export function resolveRenderConfig(
  state: ProxyState,
  options: IptablesRenderOptions = {},
): ResolvedRenderConfig {
  const family = state.family;
  const detector = localDetectorFor(options, state.node.podCIDRs, family);

  // NodePort addresses, as upstream's NodePortAddresses: family filter, zero CIDR = all.
  const nodeIPs = state.node.ips;
  const npa = resolveNodePortAddresses(options.nodePortAddresses ?? [], family, nodeIPs[0]);
  const localhostNodePorts = family === "IPv4" && (options.localhostNodePorts ?? true) &&
    npa.containsIPv4Loopback;

  let nodePortIPs: string[] | null = null;
  if (!npa.matchAll) {
    const local = options.localAddresses ??
      [...nodeIPs, family === "IPv4" ? IPV4_LOOPBACK : "::1"];
    // Upstream logs and skips loopback here when localhost NodePorts cannot work.
    nodePortIPs = selectNodePortIPs(npa, local).filter((ip) =>
      localhostNodePorts || !isLoopbackIP(ip)
    );
  }

  return {
    family,
    masqueradeMark: masqueradeMarkText(options.masqueradeBit ?? 14),
    masqueradeAll: options.masqueradeAll ?? false,
    ifLocal: detector.ifLocal,
    ifNotLocal: detector.ifNotLocal,
    localhostNodePorts,
    randomFully: options.randomFully ?? true,
    conntrackTCPLiberal: options.conntrackTCPLiberal ?? false,
    countInvalidDropped: options.nfacctCounters?.has(CT_STATE_INVALID_DROPPED_COUNTER) ?? false,
    countLocalhostNodePorts: localhostNodePorts &&
      (options.nfacctCounters?.has(LOCALHOST_NODEPORTS_ACCEPTED_COUNTER) ?? false),
    nodePortIPs,
    nodeIPs,
  };
}

/** The render options of one family, taken from the configuration. */
export function iptablesRenderOptions(
  config: ProxyConfig,
  family: IPFamily,
): IptablesRenderOptions {
  const common = commonRenderOptions(config, family);
  // Fail at startup, not at every sync, on an interface name that cannot go into a rule.
  localTrafficDetector({
    mode: common.detectLocalMode,
    bridgeInterface: common.bridgeInterface,
    interfaceNamePrefix: common.interfaceNamePrefix,
  }, family);
  return { ...common, localhostNodePorts: config.iptables.localhostNodePorts };
}
