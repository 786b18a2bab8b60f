/**
 * The reference model in IPVS mode, as upstream's IPVS proxier (pkg/proxy/ipvs/proxier.go)
 * programs a node: every service address is a virtual server whose real servers are chosen
 * once per address kind, and the kernel, not a REJECT/DROP rule, answers for one without real
 * servers. Only loadBalancerSourceRanges are filtered by iptables, and only on the hooks
 * upstream jumps from. Pure.
 */
import { canonicalIP } from "../net/mod.ts";
import { type Endpoint, externallyAccessible, type ServicePortState } from "../proxy/mod.ts";
import type { TraceDecision, TracePacket } from "./decision.ts";
import type { ServiceHit } from "./_model_match.ts";
import { inCIDR, type ModelOptions } from "./model_options.ts";
import { clusterMasquerade, forward, refuse } from "./_model_verdict.ts";

/** The virtual server uses only local endpoints: ITP Local on the ClusterIP, ETP Local elsewhere. */
function localOnly(hit: ServiceHit): boolean {
  const info = hit.sps.info;
  if (hit.kind === "cluster-ip") return info.internalPolicyLocal;
  return info.externalPolicyLocal && externallyAccessible(info);
}

/**
 * The real servers of the virtual server the packet hits. Upstream's syncEndpoint takes the
 * local endpoints for a Local policy and, when there is none, the cluster endpoints instead
 * (kubernetes/kubernetes#97081: "allow access from local pods even if no local endpoints
 * exist"), never a DROP.
 * The cluster set is empty for ITP Local unless the service is also reachable from outside
 * with ETP Cluster, so such a virtual server may end up with no real server at all.
 */
function realServers(hit: ServiceHit): readonly Endpoint[] {
  const sps = hit.sps;
  if (localOnly(hit) && sps.localEndpoints.length > 0) return sps.localEndpoints;
  return sps.clusterEndpoints;
}

function sameIP(a: string, b: string): boolean {
  return (canonicalIP(a) ?? a) === (canonicalIP(b) ?? b);
}

/**
 * Whether KUBE-PROXY-FIREWALL or KUBE-IPVS-OUT-FILTER drops the packet. Upstream fills
 * KUBE-LOAD-BALANCER-FW for every LB IP with source ranges whatever its endpoints, and jumps to
 * KUBE-PROXY-FIREWALL from filter INPUT and FORWARD only, so pods and outside clients are
 * checked against the ranges even when the service has no endpoint. A range holding the node
 * IP adds `LBIP,proto:port,LBIP` to KUBE-LOAD-BALANCER-SOURCE-IP (the LB IP itself as source is
 * let in); otherwise upstream writes `-s LBIP -m ipvs --vaddr LBIP … -j DROP` into
 * KUBE-IPVS-OUT-FILTER (filter OUTPUT, kubernetes/kubernetes#119656). That is the only check on
 * the node's own traffic, and it sees a packet only after IPVS has picked a real server.
 */
function sourceRangeDrops(
  sps: ServicePortState,
  packet: TracePacket,
  options: ModelOptions,
  hasRealServers: boolean,
): boolean {
  const ranges = sps.info.loadBalancerSourceRanges;
  if (ranges.length === 0) return false;
  const allowFromNode = ranges.some((r) => options.nodeIPs.some((ip) => inCIDR(r, ip)));
  const fromItself = sameIP(packet.from, packet.to);
  if (packet.source === "node") return hasRealServers && fromItself && !allowFromNode;
  if (ranges.some((r) => inCIDR(r, packet.from))) return false;
  return !(allowFromNode && fromItself);
}

/**
 * What IPVS mode does with a packet to a service address (`hit`). Masquerading follows
 * KUBE-SERVICES: ClusterIPs as the local-traffic detector says; external IPs, LB IPs and
 * NodePorts always, unless their policy is ETP Local (the *-LOCAL sets RETURN before the mark;
 * remote fallback endpoints are then reached un-SNATed, as upstream's comment warns).
 */
export function ipvsDecision(
  hit: ServiceHit,
  packet: TracePacket,
  options: ModelOptions,
): TraceDecision {
  const { sps } = hit;
  const reals = realServers(hit);
  if (hit.kind === "load-balancer" && sourceRangeDrops(sps, packet, options, reals.length > 0)) {
    return refuse("drop", sps, "source-range");
  }
  // No REJECT rule exists in IPVS mode: the kernel answers for a virtual server without real
  // servers (ICMP port unreachable), and it cannot tell "no local endpoint" from "none".
  if (reals.length === 0) return refuse("reject", sps, "no-endpoints");
  if (hit.kind === "cluster-ip") return forward(sps, reals, clusterMasquerade(packet, options));
  return forward(sps, reals, !localOnly(hit));
}
