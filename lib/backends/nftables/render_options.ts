/**
 * The knobs of the nftables renderer and their resolution into the pieces rules are made of
 * (family words, masquerade mark, local-traffic matches, NodePort addresses). Pure.
 */
import {
  type CIDR,
  cidrContains,
  cidrString,
  isLoopbackIP,
  parseCIDR,
  resolveNodePortAddresses,
  selectNodePortIPs,
} from "../../net/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import { masqueradeMarkText } from "../common/mod.ts";
import type { NftFamily } from "./table_model.ts";
import { commonRenderOptions, type ProxyConfig } from "../../config/mod.ts";

/** --detect-local-mode values, spelled as upstream's KubeProxyConfiguration. */
export type NftDetectLocalMode =
  | "ClusterCIDR"
  | "NodeCIDR"
  | "BridgeInterface"
  | "InterfaceNamePrefix";

/** What the renderer needs besides the ProxyState; every field has upstream's default. */
export interface NftablesRenderOptions {
  /** Bit of the packet mark that flags traffic for masquerade (default 14, i.e. 0x4000). */
  readonly masqueradeBit?: number;
  /** --masquerade-all. */
  readonly masqueradeAll?: boolean;
  /** --cluster-cidr values; the first of the state's family tells pod traffic apart. */
  readonly clusterCIDRs?: readonly string[];
  /** --detect-local-mode (default ClusterCIDR). */
  readonly detectLocalMode?: NftDetectLocalMode;
  /** --pod-bridge-interface. */
  readonly bridgeInterface?: string;
  /** --pod-interface-name-prefix. */
  readonly interfaceNamePrefix?: string;
  /** --nodeport-addresses; nftables mode's default is `primary` (upstream's platform default). */
  readonly nodePortAddresses?: readonly string[];
  /** Local addresses to pick NodePort IPs from; default the node's IPs of the family. */
  readonly localAddresses?: readonly string[];
}

/** The options resolved for one family: what the rule writers consume. */
export interface NftRenderConfig {
  readonly family: IPFamily;
  readonly nftFamily: NftFamily;
  /** `ip` or `ip6`: the payload keyword for saddr/daddr. */
  readonly ipWord: NftFamily;
  /** `ipv4_addr` or `ipv6_addr`. */
  readonly addrType: string;
  /** `127.0.0.0/8` or `::1`. */
  readonly loopback: string;
  readonly mark: string;
  readonly masqueradeAll: boolean;
  /** Match text of pod-sourced traffic, and of the rest; null when no detector applies. */
  readonly ifLocal: string | null;
  readonly ifNotLocal: string | null;
  /** null: NodePorts on every local (non-loopback) address; else these IPs. */
  readonly nodePortIPs: readonly string[] | null;
  readonly nodeIPs: readonly string[];
  /** --nodeport-addresses selects loopback, which this mode does not serve (logged at start). */
  readonly loopbackRequested: boolean;
  /**
   * This family's ServiceCIDRs, without those inside another: new traffic to them that no
   * ClusterIP took is dropped. Empty: no such rule. Part of the config, so a change is a full sync.
   */
  readonly serviceCIDRs: readonly string[];
}

/** Interface name characters (no space, quote or "*"). */
const IFACE_CHARS = /^[A-Za-z0-9_.@:-]+$/;

function detector(
  family: IPFamily,
  ipWord: string,
  options: NftablesRenderOptions,
  podCIDRs: readonly string[],
): { ifLocal: string | null; ifNotLocal: string | null } {
  const mode = options.detectLocalMode ?? "ClusterCIDR";
  if (mode === "ClusterCIDR" || mode === "NodeCIDR") {
    const cidrs = mode === "ClusterCIDR" ? options.clusterCIDRs ?? [] : podCIDRs;
    for (const raw of cidrs) {
      const c = parseCIDR(raw.trim());
      if (c === null) throw new RangeError(`Invalid ${mode} CIDR "${raw}": expected a CIDR`);
      if (c.family !== family) continue;
      const text = cidrString(c);
      return { ifLocal: `${ipWord} saddr ${text}`, ifNotLocal: `${ipWord} saddr != ${text}` };
    }
    return { ifLocal: null, ifNotLocal: null };
  }
  const bridge = mode === "BridgeInterface";
  const name = (bridge ? options.bridgeInterface : options.interfaceNamePrefix) ?? "";
  const max = bridge ? 15 : 14;
  if (!IFACE_CHARS.test(name) || name.length > max) {
    throw new RangeError(
      `Invalid ${
        bridge ? "bridge interface" : "interface name prefix"
      } "${name}": expected 1 to ${max} letters, digits or "_.@:-"`,
    );
  }
  const match = `"${name}${bridge ? "" : "*"}"`;
  return { ifLocal: `iifname ${match}`, ifNotLocal: `iifname != ${match}` };
}

/** Resolves the options for the state's family. */
export function resolveNftRenderConfig(
  state: ProxyState,
  options: NftablesRenderOptions = {},
): NftRenderConfig {
  const family = state.family;
  const v6 = family === "IPv6";
  const ipWord: NftFamily = v6 ? "ip6" : "ip";
  const nodeIPs = state.node.ips;
  const npa = resolveNodePortAddresses(
    options.nodePortAddresses ?? ["primary"],
    family,
    nodeIPs[0],
  );
  const candidates = options.localAddresses ?? nodeIPs;
  const nodePortIPs = npa.matchAll
    ? null
    : selectNodePortIPs(npa, candidates).filter((ip) => !isLoopbackIP(ip));
  const loopbackRequested = npa.containsIPv4Loopback;
  const det = detector(family, ipWord, options, state.node.podCIDRs);
  return {
    family,
    nftFamily: ipWord,
    ipWord,
    addrType: v6 ? "ipv6_addr" : "ipv4_addr",
    loopback: v6 ? "::1" : "127.0.0.0/8",
    mark: masqueradeMarkText(options.masqueradeBit ?? 14),
    masqueradeAll: options.masqueradeAll ?? false,
    ifLocal: det.ifLocal,
    ifNotLocal: det.ifNotLocal,
    nodePortIPs,
    nodeIPs,
    loopbackRequested,
    serviceCIDRs: outermostCIDRs(state.serviceCIDRs, family),
  };
}

/** The valid CIDRs of `family` not inside another (equal ones once), canonical, in input order. */
function outermostCIDRs(raw: readonly string[], family: IPFamily): readonly string[] {
  const cidrs = raw.flatMap((r) => {
    const c = parseCIDR(r);
    return c !== null && c.family === family ? [c] : [];
  });
  const covers = (o: CIDR, c: CIDR) => o.prefix <= c.prefix && cidrContains(o, c.ip);
  return cidrs.filter((c, i) =>
    !cidrs.some((o, j) => j !== i && covers(o, c) && (o.prefix < c.prefix || j < i))
  ).map(cidrString);
}

/** The render options of one family, taken from the configuration. */
export function nftablesRenderOptions(
  config: ProxyConfig,
  family: IPFamily,
): NftablesRenderOptions {
  return commonRenderOptions(config, family);
}
