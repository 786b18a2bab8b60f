/**
 * The reference model of service routing: from a ProxyState alone, what upstream's semantics
 * do with one packet. Every mode's tracer is compared against it. Endpoint selection is the
 * brain's (ServicePortState's cluster and local sets); this file only decides which set a
 * packet uses, whether it is masqueraded, or why it is refused. iptables and nftables modes are
 * decided here; IPVS mode, whose proxier differs in kind, in model_ipvs.ts. Pure.
 */
import { externallyAccessible } from "../proxy/mod.ts";
import type { ProxyState, ServicePortState } from "../proxy/mod.ts";
import type { TraceDecision, TracePacket } from "./decision.ts";
import {
  findServiceHit,
  isUnallocatedClusterIP,
  isUnusedServicePort,
  type ServiceHit,
  trustedServicePorts,
} from "./_model_match.ts";
import { ipvsDecision } from "./_model_ipvs.ts";
import { inCIDR, type ModelOptions } from "./model_options.ts";
import { clusterMasquerade, forward, fromPod, refuse } from "./_model_verdict.ts";

export { equalShares } from "./_model_verdict.ts";

/**
 * iptables refuses external and LB IPs in KUBE-EXTERNAL-SERVICES, hooked on INPUT and FORWARD
 * only: the node's own packet to a non-local one leaves the node untouched (unless the LB IP's
 * firewall drops it).
 */
function externalRefusalApplies(
  hit: ServiceHit,
  packet: TracePacket,
  options: ModelOptions,
): boolean {
  const externalVIP = hit.kind === "external-ip" || hit.kind === "load-balancer";
  // An LB IP with source ranges is also dropped by KUBE-PROXY-FIREWALL, hooked on OUTPUT too.
  const firewalled = hit.kind === "load-balancer" && hit.sps.hasAnyEndpoints &&
    hit.sps.info.loadBalancerSourceRanges.length > 0;
  return !(options.mode === "iptables" && externalVIP && !firewalled &&
    packet.source === "node" && !options.localAddresses.includes(packet.to));
}

/** A loadBalancerSourceRanges check that refuses this packet, as every mode writes it. */
function outsideSourceRanges(hit: ServiceHit, packet: TracePacket, options: ModelOptions): boolean {
  const info = hit.sps.info;
  if (hit.kind !== "load-balancer" || info.loadBalancerSourceRanges.length === 0) return false;
  if (!hit.sps.hasAnyEndpoints) return false;
  const ranges = info.loadBalancerSourceRanges;
  if (ranges.some((r) => inCIDR(r, packet.from))) return false;
  // A range holding a node IP lets the node reach its own LB IPs (sources are the LB IPs).
  const allowFromNode = ranges.some((r) => options.nodeIPs.some((ip) => inCIDR(r, ip)));
  return !(allowFromNode && info.loadBalancerIPs.includes(packet.from));
}

function clusterIPDecision(
  sps: ServicePortState,
  packet: TracePacket,
  options: ModelOptions,
): TraceDecision {
  const masquerade = clusterMasquerade(packet, options);
  if (sps.info.internalPolicyLocal) {
    if (sps.localEndpoints.length > 0) return forward(sps, sps.localEndpoints, masquerade);
    return refuse("drop", sps, "no-local-endpoints");
  }
  return forward(sps, sps.clusterEndpoints, masquerade);
}

function externalDecision(
  hit: ServiceHit,
  packet: TracePacket,
  options: ModelOptions,
): TraceDecision {
  const { sps } = hit;
  const info = sps.info;
  if (!(info.externalPolicyLocal && externallyAccessible(info))) {
    return forward(sps, sps.clusterEndpoints, true);
  }
  // ETP Local short-circuits: pods and the node itself reach every endpoint.
  if (fromPod(packet, options)) return forward(sps, sps.clusterEndpoints, false);
  if (options.localAddresses.includes(packet.from)) {
    return forward(sps, sps.clusterEndpoints, true);
  }
  if (sps.localEndpoints.length > 0) return forward(sps, sps.localEndpoints, false);
  return externalRefusalApplies(hit, packet, options)
    ? refuse("drop", sps, "no-local-endpoints")
    : { kind: "pass" };
}

/** Options for modelDecision. */
export type { ModelOptions } from "./model_options.ts";

/** What upstream's semantics do with `packet` on this node, in `options.mode`. */
export function modelDecision(
  state: ProxyState,
  packet: TracePacket,
  options: ModelOptions,
): TraceDecision {
  if (packet.family !== state.family) return { kind: "pass" };
  const ports = trustedServicePorts(state);
  const hit = findServiceHit(ports, packet, options);
  if (hit === null) {
    if (isUnusedServicePort(ports, packet, options)) return refuse("reject", null, "unused-port");
    return isUnallocatedClusterIP(state, packet, options)
      ? refuse("drop", null, "unallocated-cluster-ip")
      : { kind: "pass" };
  }
  // Past finding the address, IPVS has its own rules: virtual servers, no REJECT/DROP rules.
  if (options.mode === "ipvs") return ipvsDecision(hit, packet, options);
  const { sps } = hit;
  if (!sps.hasAnyEndpoints) {
    if (!externalRefusalApplies(hit, packet, options)) return { kind: "pass" };
    return refuse("reject", sps, "no-endpoints");
  }
  if (outsideSourceRanges(hit, packet, options)) return refuse("drop", sps, "source-range");
  if (hit.kind === "cluster-ip") return clusterIPDecision(sps, packet, options);
  if (!hit.captured) {
    // iptables: a local address that does not serve NodePorts still refuses a Local-policy
    // service's NodePort without local endpoints; anything else passes untouched.
    return sps.localEndpoints.length === 0 && sps.info.externalPolicyLocal
      ? refuse("drop", sps, "no-local-endpoints")
      : { kind: "pass" };
  }
  return externalDecision(hit, packet, options);
}
