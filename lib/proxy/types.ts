/**
 * The data model shared by the brain (change trackers, endpoint selection) and the backends.
 * Everything here is plain immutable data: backends render rules from a ProxyState and nothing else.
 *
 * IP plan used throughout the tests: pods 10.0.0.0/8, service IPs 172.30.0.0/16,
 * node 192.168.0.2, external client 203.0.113.2.
 */
import type { IPFamily } from "../net/mod.ts";

/** A transport protocol a Service port can carry. */
export type Protocol = "TCP" | "UDP" | "SCTP";

/** An IP family; one proxier (and one ProxyState) exists per family (declared by lib/net). */
export type { IPFamily };

/** Identifies one port of one Service, as upstream's ServicePortName (`ns/name:port`). */
export interface ServicePortName {
  readonly namespace: string;
  readonly name: string;
  /** The port's name; "" for an unnamed port. */
  readonly port: string;
  readonly protocol: Protocol;
}

/** Formats a ServicePortName as upstream prints it: `ns/name:port` (or `ns/name` when unnamed). */
export function servicePortNameString(spn: ServicePortName): string {
  return spn.port === ""
    ? `${spn.namespace}/${spn.name}`
    : `${spn.namespace}/${spn.name}:${spn.port}`;
}

/** A unique map key for a ServicePortName: `ns/name:port/PROTO`. */
export function servicePortKey(spn: ServicePortName): string {
  return `${spn.namespace}/${spn.name}:${spn.port}/${spn.protocol}`;
}

/** One load balancer ingress address of a Service. */
export interface LoadBalancerIngress {
  readonly ip: string;
  /** `Proxy` ingress addresses are handled by the load balancer itself and get no rules. */
  readonly ipMode?: "VIP" | "Proxy";
}

/** One validated port of one Service, for one IP family (upstream's BaseServicePortInfo). */
export interface ServicePort {
  readonly name: ServicePortName;
  /** The ClusterIP of this family. */
  readonly clusterIP: string;
  readonly port: number;
  readonly protocol: Protocol;
  /** 0 when the service has no NodePort. */
  readonly nodePort: number;
  /** ExternalIPs of this family. */
  readonly externalIPs: readonly string[];
  /** LoadBalancer ingress IPs of this family (ipMode Proxy already removed). */
  readonly loadBalancerIPs: readonly string[];
  /** loadBalancerSourceRanges of this family, as CIDRs. */
  readonly loadBalancerSourceRanges: readonly string[];
  /** ClientIP affinity timeout in seconds; 0 means no session affinity. */
  readonly stickyMaxAgeSeconds: number;
  /** externalTrafficPolicy: Local (only meaningful with NodePort/LB/externalIPs). */
  readonly externalPolicyLocal: boolean;
  /** internalTrafficPolicy: Local. */
  readonly internalPolicyLocal: boolean;
  /** 0 when unset. */
  readonly healthCheckNodePort: number;
}

/** One endpoint of one ServicePort (upstream's BaseEndpointInfo). */
export interface Endpoint {
  readonly ip: string;
  readonly port: number;
  /** `ip:port` (IPv6 as `[ip]:port`). */
  readonly address: string;
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  /** The endpoint runs on this node. */
  readonly isLocal: boolean;
  readonly nodeName: string;
  readonly zone: string;
  /** hints.forZones names. */
  readonly zoneHints: readonly string[];
  /** hints.forNodes names. */
  readonly nodeHints: readonly string[];
}

/** The result of upstream's CategorizeEndpoints for one ServicePort on this node. */
export interface CategorizedEndpoints {
  /** Endpoints for traffic subject to the cluster traffic policy (null = policy is Local). */
  readonly clusterEndpoints: readonly Endpoint[];
  /** Endpoints for traffic subject to a Local traffic policy. */
  readonly localEndpoints: readonly Endpoint[];
  /** Union of both: every endpoint that some traffic may reach (needs a SEP chain). */
  readonly allReachableEndpoints: readonly Endpoint[];
  /** Whether the service has any usable endpoint anywhere (REJECT vs DROP). */
  readonly hasAnyEndpoints: boolean;
}

/** One ServicePort with its merged endpoints and the selection made for this node. */
export interface ServicePortState extends CategorizedEndpoints {
  readonly info: ServicePort;
  /** Every endpoint from every slice of the service, deduplicated and sorted. */
  readonly allEndpoints: readonly Endpoint[];
}

/** What the proxy knows about its own Node. */
export interface NodeInfo {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  /** This family's node IPs (from the Node, else --node-ip). */
  readonly ips: readonly string[];
  /** This family's podCIDRs (for --detect-local-mode NodeCIDR). */
  readonly podCIDRs: readonly string[];
}

/** The immutable snapshot one sync renders: every service port of one family on this node. */
export interface ProxyState {
  readonly family: IPFamily;
  readonly node: NodeInfo;
  /** Keyed by servicePortKey(). Iterate in sorted key order for deterministic output. */
  readonly services: ReadonlyMap<string, ServicePortState>;
  /**
   * servicePortKeys whose service or endpoints changed since the previous snapshot
   * (including keys that disappeared). Backends may use it for partial syncs.
   */
  readonly changed: ReadonlySet<string>;
  /** A change that invalidates everything (first snapshot, node labels changed). */
  readonly forceFullSync: boolean;
  /** Total endpoints across all services (upstream drops comments above 1000). */
  readonly totalEndpoints: number;
  /**
   * This family's ServiceCIDRs, canonical and sorted ([] when none is known); only nftables
   * mode uses them, to drop traffic to unallocated ClusterIPs.
   */
  readonly serviceCIDRs: readonly string[];
}
