/**
 * What one IPVS sync wants, computed from a ProxyState alone (upstream's syncProxyRules loop
 * without the kernel calls): virtual servers with their real servers, the members of every
 * ipset, the addresses bound to kube-ipvs0, and the LB addresses the node may not reach.
 */
import { type SkippedServicePort, untrustedValue, validPort } from "../../proxy/mod.ts";
import { cidrContains, ipFamily, parseCIDR } from "../../net/mod.ts";
import type { Endpoint, IPFamily, ProxyState, ServicePortState } from "../../proxy/mod.ts";
import { ipPortEntry, ipPortIpEntry, ipPortNetEntry, IPSET, IPSET_SPECS } from "./_ipset_specs.ts";
import { type IpvsOptions, type ResolvedIpvsConfig, resolveIpvsConfig } from "./ipvs_options.ts";
import {
  type RealServer,
  realServerKey,
  type VirtualServer,
  virtualServerKey,
  type VirtualServerState,
} from "./virtual_server.ts";

/** An LB address:port whose source ranges exclude the node: KUBE-IPVS-OUT-FILTER drops it. */
export interface LbNoNodeAccess {
  readonly ip: string;
  readonly protocol: string;
  readonly port: number;
}

/** The desired IPVS state of one family. */
export interface IpvsDesiredState {
  readonly family: IPFamily;
  readonly config: ResolvedIpvsConfig;
  /** Virtual servers by virtualServerKey, each with its wanted real servers (weight 1). */
  readonly virtualServers: ReadonlyMap<string, VirtualServerState>;
  /** Members of each of the 17 sets, by IPv4 set name (every set present, maybe empty). */
  readonly ipsets: ReadonlyMap<string, ReadonlySet<string>>;
  /** Addresses to hold on kube-ipvs0 (= KUBE-IPVS-IPS). */
  readonly boundAddresses: ReadonlySet<string>;
  readonly lbNoNodeAccess: readonly LbNoNodeAccess[];
  /** Service names with a Local policy and no local endpoint, as upstream's gauges count. */
  readonly noLocalEndpoints: { readonly internal: number; readonly external: number };
  readonly skipped: readonly SkippedServicePort[];
}

/** Endpoint values are re-checked where written: allEndpoints is not covered by the guard. */
function safeEndpoint(ep: Endpoint, family: IPFamily): boolean {
  return ipFamily(ep.ip) === family && validPort(ep.port);
}

/** One service port's part of the desired state; shares merge into IpvsDesiredState. */
export interface PortShare {
  /** Virtual servers by virtualServerKey, each with its wanted real servers. */
  readonly virtualServers: ReadonlyMap<string, VirtualServerState>;
  /** `[IPv4 set name, member]` pairs, in the order they were added (KUBE-IPVS-IPS excluded). */
  readonly members: readonly (readonly [string, string])[];
  /** Addresses this port needs on kube-ipvs0 (they are KUBE-IPVS-IPS's members too). */
  readonly bound: readonly string[];
  readonly lbNoNodeAccess: readonly LbNoNodeAccess[];
  /** "namespace/name" when a Local policy found no local endpoint (per policy), else null. */
  readonly noLocalInternal: string | null;
  readonly noLocalExternal: string | null;
}

class ShareBuilder {
  readonly virtualServers = new Map<string, VirtualServerState>();
  readonly members: (readonly [string, string])[] = [];
  readonly bound: string[] = [];
  readonly lbNoNodeAccess: LbNoNodeAccess[] = [];
  noLocalInternal: string | null = null;
  noLocalExternal: string | null = null;

  constructor(readonly config: ResolvedIpvsConfig) {}

  member(set: string, entry: string): void {
    this.members.push([set, entry]);
  }

  /** Upstream's syncEndpoint selection: local endpoints, falling back to cluster ones. */
  endpointsFor(sps: ServicePortState, onlyLocal: boolean): readonly Endpoint[] {
    if (!onlyLocal) return sps.clusterEndpoints;
    if (sps.localEndpoints.length > 0) return sps.localEndpoints;
    const ns = `${sps.info.name.namespace}/${sps.info.name.name}`;
    if (sps.hasAnyEndpoints && sps.info.internalPolicyLocal) this.noLocalInternal = ns;
    if (sps.hasAnyEndpoints && sps.info.externalPolicyLocal) this.noLocalExternal = ns;
    return sps.clusterEndpoints;
  }

  virtualServer(sps: ServicePortState, address: string, port: number, onlyLocal: boolean): void {
    const info = sps.info;
    const vs: VirtualServer = {
      address,
      port,
      protocol: info.protocol,
      scheduler: this.config.scheduler,
      persistentTimeout: info.stickyMaxAgeSeconds,
      schedFlags: this.config.scheduler === "mh" ? ["mh-port"] : [],
    };
    const realServers = new Map<string, RealServer>();
    for (const ep of this.endpointsFor(sps, onlyLocal)) {
      if (!safeEndpoint(ep, this.config.family)) continue;
      const rs = { address: ep.ip, port: ep.port, weight: 1 };
      realServers.set(realServerKey(rs), rs);
    }
    this.virtualServers.set(virtualServerKey(vs), { vs, realServers });
  }

  bind(address: string): void {
    if (!this.bound.includes(address)) this.bound.push(address);
  }
}

/**
 * What one trusted service port wants: upstream's per-service-port body of syncProxyRules.
 * Pure; the caller has checked the port with untrustedValue().
 */
export function computePortShare(sps: ServicePortState, config: ResolvedIpvsConfig): PortShare {
  const b = new ShareBuilder(config);
  const info = sps.info;
  const proto = info.protocol;
  for (const ep of sps.allEndpoints) {
    if (ep.isLocal && safeEndpoint(ep, config.family)) {
      b.member(IPSET.loopBack, ipPortIpEntry(ep.ip, proto, ep.port, ep.ip));
    }
  }

  b.member(IPSET.clusterIP, ipPortEntry(info.clusterIP, proto, info.port));
  b.virtualServer(sps, info.clusterIP, info.port, info.internalPolicyLocal);
  b.bind(info.clusterIP);

  for (const ip of info.externalIPs) {
    const set = info.externalPolicyLocal ? IPSET.externalIPLocal : IPSET.externalIP;
    b.member(set, ipPortEntry(ip, proto, info.port));
    b.virtualServer(sps, ip, info.port, info.externalPolicyLocal);
    if (!config.nodeAddresses.includes(ip)) b.bind(ip);
  }

  for (const ip of info.loadBalancerIPs) {
    const entry = ipPortEntry(ip, proto, info.port);
    b.member(IPSET.loadBalancer, entry);
    if (info.externalPolicyLocal) b.member(IPSET.loadBalancerLocal, entry);
    if (info.loadBalancerSourceRanges.length > 0) {
      b.member(IPSET.loadBalancerFW, entry);
      let allowFromNode = false;
      for (const range of info.loadBalancerSourceRanges) {
        b.member(IPSET.loadBalancerSourceCIDR, ipPortNetEntry(ip, proto, info.port, range));
        const c = parseCIDR(range);
        const node = config.primaryNodeIP;
        if (c !== null && node !== undefined && cidrContains(c, node)) allowFromNode = true;
      }
      if (allowFromNode) {
        b.member(IPSET.loadBalancerSourceIP, ipPortIpEntry(ip, proto, info.port, ip));
      } else {
        b.lbNoNodeAccess.push({ ip, protocol: proto.toLowerCase(), port: info.port });
      }
    }
    b.virtualServer(sps, ip, info.port, info.externalPolicyLocal);
    if (!config.nodeAddresses.includes(ip)) b.bind(ip);
  }

  if (info.nodePort !== 0 && config.nodePortIPs.length > 0) {
    const local = info.externalPolicyLocal;
    if (proto === "SCTP") {
      for (const nodeIP of config.nodePortIPs) {
        const entry = ipPortEntry(nodeIP, proto, info.nodePort);
        b.member(IPSET.nodePortSCTP, entry);
        if (local) b.member(IPSET.nodePortLocalSCTP, entry);
      }
    } else {
      const tcp = proto === "TCP";
      b.member(tcp ? IPSET.nodePortTCP : IPSET.nodePortUDP, String(info.nodePort));
      if (local) {
        b.member(tcp ? IPSET.nodePortLocalTCP : IPSET.nodePortLocalUDP, String(info.nodePort));
      }
    }
    for (const nodeIP of config.nodePortIPs) b.virtualServer(sps, nodeIP, info.nodePort, local);
  }

  if (info.healthCheckNodePort !== 0) {
    b.member(IPSET.healthCheckNodePort, String(info.healthCheckNodePort));
  }
  return b;
}

/**
 * Computes the desired state. Service ports with a value that cannot be trusted are skipped
 * and reported; nothing of theirs reaches a virtual server, a set or a rule.
 */
export function computeIpvsDesiredState(
  state: ProxyState,
  options: IpvsOptions = {},
): IpvsDesiredState {
  const config = resolveIpvsConfig(state, options);
  const shares: PortShare[] = [];
  const skipped: SkippedServicePort[] = [];
  for (const key of [...state.services.keys()].sort()) {
    const sps = state.services.get(key)!;
    const reason = untrustedValue(sps, state.family);
    if (reason === null) shares.push(computePortShare(sps, config));
    else skipped.push({ key, reason });
  }
  return mergePortShares(config, shares, skipped);
}

/** Merges shares (in service-port key order) into one desired state, as one pass would. */
export function mergePortShares(
  config: ResolvedIpvsConfig,
  shares: Iterable<PortShare>,
  skipped: readonly SkippedServicePort[] = [],
): IpvsDesiredState {
  const virtualServers = new Map<string, VirtualServerState>();
  const ipsets = new Map<string, Set<string>>(IPSET_SPECS.map((s) => [s.base, new Set()]));
  const bound = new Set<string>();
  const lbNoNodeAccess: LbNoNodeAccess[] = [];
  const noLocalInternal = new Set<string>();
  const noLocalExternal = new Set<string>();
  for (const share of shares) {
    for (const [key, vs] of share.virtualServers) virtualServers.set(key, vs);
    for (const [set, entry] of share.members) ipsets.get(set)!.add(entry);
    for (const ip of share.bound) bound.add(ip);
    lbNoNodeAccess.push(...share.lbNoNodeAccess);
    if (share.noLocalInternal !== null) noLocalInternal.add(share.noLocalInternal);
    if (share.noLocalExternal !== null) noLocalExternal.add(share.noLocalExternal);
  }
  const ipvsIPs = ipsets.get(IPSET.ipvsIPs)!;
  for (const ip of bound) ipvsIPs.add(ip);
  return {
    family: config.family,
    config,
    virtualServers,
    ipsets,
    boundAddresses: bound,
    lbNoNodeAccess,
    noLocalEndpoints: { internal: noLocalInternal.size, external: noLocalExternal.size },
    skipped,
  };
}
