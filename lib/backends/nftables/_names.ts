/**
 * Object names of our nftables layout. Fixed chains and maps keep upstream's names; the
 * dispatch chains are shared by every service with the same endpoint counts (their count is
 * independent of the number of services); only session-affinity services get chains and sets
 * of their own, named as upstream names them (`<prefix><hash>-ns/svc/proto/port`).
 */
import { nameHash } from "../common/mod.ts";

/** The table name in both families. */
export const NFT_TABLE = "kube-proxy";
/** The table's comment, as upstream's. */
export const NFT_TABLE_COMMENT = "rules for kube-proxy";

/** Fixed chains (upstream's names). */
export const SERVICES_CHAIN = "services";
export const SERVICE_ENDPOINTS_CHECK = "service-endpoints-check";
export const NODEPORT_ENDPOINTS_CHECK = "nodeport-endpoints-check";
export const REJECT_CHAIN = "reject-chain";
export const FIREWALL_CHECK = "firewall-check";
export const CLUSTER_IPS_CHECK = "cluster-ips-check";
export const MARK_FOR_MASQUERADE = "mark-for-masquerade";
export const MASQUERADING = "masquerading";

/** Fixed sets and maps (upstream's names, plus the shared endpoint maps of our layout). */
export const CLUSTER_IPS = "cluster-ips";
export const NODEPORT_IPS = "nodeport-ips";
export const SERVICE_IPS = "service-ips";
export const SERVICE_NODEPORTS = "service-nodeports";
export const NO_ENDPOINT_SERVICES = "no-endpoint-services";
export const NO_ENDPOINT_NODEPORTS = "no-endpoint-nodeports";
export const FIREWALL_IPS = "firewall-ips";
/** `daddr . proto . port . source-range` pairs that loadBalancerSourceRanges allow. */
export const FIREWALL_ALLOW = "firewall-allow";
/**
 * The endpoint maps, one per protocol: `daddr . port . index` → endpoint (ClusterIPs, external
 * and LB IPs) or `nodePort . index` → endpoint (NodePorts). One per protocol because nft 1.0.6
 * cannot add a DNAT rule over an existing map whose value is typed `ip daddr . th dport`
 * ("conflicting protocols specified"); with `tcp dport` etc. it can (upstream's WIP does the same).
 */
export function endpointMapName(nodePort: boolean, protocol: string): string {
  return `${nodePort ? "nodeport" : "service"}-endpoints-${protocol}`;
}

/** The protocols, lower-case, as nft spells them. */
export const NFT_PROTOCOLS: readonly string[] = ["tcp", "udp", "sctp"];

/** `epIP . epIP . proto . epPort` of local endpoints: pod-to-own-service (hairpin) traffic. */
export const HAIRPIN_CONNECTIONS = "hairpin-connections";

/**
 * `0 : hash-low, 1 : hash-high` of everything else in the table, rewritten by every
 * transaction; a restarted proxy that renders the same fingerprint adopts the table unwritten.
 */
export const SYNC_STAMP = "sync-stamp";

/**
 * Index offset in the endpoint maps of the Cluster-policy endpoints of an
 * externalTrafficPolicy Local entry point (what pod and node traffic short-circuits to).
 */
export const SHORT_CIRCUIT_OFFSET = 32768;

/** Shared chain: ClusterIP traffic of `protocol` DNATed to one of `n` endpoints. */
export function clusterChainName(protocol: string, n: number): string {
  return `service-${protocol}-${n}`;
}

/** Shared chain: ETP Cluster traffic to an external/LB IP (`nodePort` false) or NodePort. */
export function externalChainName(nodePort: boolean, protocol: string, n: number): string {
  return `${nodePort ? "nodeport" : "external"}-${protocol}-${n}`;
}

/**
 * Shared chain: ETP Local traffic to an external/LB IP or NodePort with `n` local endpoints,
 * whose pod and node traffic short-circuits to `m` cluster endpoints.
 */
export function externalLocalChainName(
  nodePort: boolean,
  protocol: string,
  n: number,
  m: number,
): string {
  return `${nodePort ? "nodeport" : "external"}-local-${protocol}-${n}-${m}`;
}

const NAME_MAX = 200;

/** `<prefix><hash8>-<name>`, upstream's hashed naming; the readable part is cut if long. */
export function hashedName(prefix: string, name: string): string {
  const base = name.length > NAME_MAX ? name.slice(0, NAME_MAX) + "..." : name;
  return `${prefix}${nameHash(name, 8)}-${base}`;
}

/** Upstream's name of a service port for chain names: `ns/svc/proto/portName`. */
export function servicePortChainBase(
  namespace: string,
  name: string,
  protocol: string,
  port: string,
): string {
  return `${namespace}/${name}/${protocol.toLowerCase()}/${port}`;
}

/** Upstream's endpoint suffix: `base__ip/port`, IPv6 colons as dots. */
export function endpointBase(serviceBase: string, ip: string, port: number): string {
  return `${serviceBase}__${ip.replaceAll(":", ".")}/${port}`;
}
