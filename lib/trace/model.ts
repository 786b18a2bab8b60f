/**
 * The reference model of service routing: from a ProxyState alone, what upstream's semantics
 * do with one packet. Every mode's tracer is compared against it. Endpoint selection is the
 * brain's (ServicePortState's cluster and local sets); this file only decides which set a
 * packet uses, whether it is masqueraded, or why it is refused. Pure.
 */
import { type Endpoint, externallyAccessible, servicePortNameString } from "../proxy/mod.ts";
import type { ProxyState, ServicePortState } from "../proxy/mod.ts";
import type { TraceDecision, TraceDropReason, TracePacket } from "./decision.ts";
import {
  findServiceHit,
  isUnallocatedClusterIP,
  isUnusedServicePort,
  type ServiceHit,
  trustedServicePorts,
} from "./model_match.ts";
import { inCIDR, type ModelOptions } from "./model_options.ts";

/** Equal shares of `endpoints`, sorted by address, as TraceDecision lists them. */
export function equalShares(endpoints: readonly Endpoint[]): TraceDecision & { kind: "forward" } {
  const sorted = [...new Set(endpoints.map((e) => e.address))].sort();
  return {
    kind: "forward",
    servicePort: "",
    endpoints: sorted.map((address) => ({ address, probability: 1 / sorted.length })),
    masquerade: false,
    affinitySeconds: 0,
  };
}

function forward(
  sps: ServicePortState,
  endpoints: readonly Endpoint[],
  masquerade: boolean,
): TraceDecision {
  return {
    ...equalShares(endpoints),
    servicePort: servicePortNameString(sps.info.name),
    masquerade,
    affinitySeconds: sps.info.stickyMaxAgeSeconds,
  };
}

function refuse(
  kind: "reject" | "drop",
  sps: ServicePortState | null,
  reason: TraceDropReason,
): TraceDecision {
  return { kind, servicePort: sps === null ? "" : servicePortNameString(sps.info.name), reason };
}

/** The source is one of this cluster's pods, as the configured detector tells. */
function fromPod(packet: TracePacket, options: ModelOptions): boolean {
  const match = options.podTraffic;
  if (match === null) return false;
  if (match === "interface") return packet.source === "pod";
  return inCIDR(match.cidr, packet.from);
}

/** Traffic to a ClusterIP from outside the pod network is masqueraded (or all of it). */
function clusterMasquerade(packet: TracePacket, options: ModelOptions): boolean {
  if (options.masqueradeAll) return true;
  if (options.podTraffic === null) return false;
  if (options.mode === "ipvs" && packet.from.startsWith("127.")) return false;
  return !fromPod(packet, options);
}

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
    if (options.mode === "ipvs") {
      // IPVS falls back to the cluster set (PR #97081), which is empty unless the service is
      // also reachable from outside; a virtual server without real servers refuses.
      return sps.clusterEndpoints.length > 0
        ? forward(sps, sps.clusterEndpoints, masquerade)
        : refuse("reject", sps, "no-local-endpoints");
    }
    return refuse("drop", sps, "no-local-endpoints");
  }
  return forward(sps, sps.clusterEndpoints, masquerade);
}

function ipvsExternalDecision(sps: ServicePortState): TraceDecision {
  const info = sps.info;
  if (info.externalPolicyLocal && externallyAccessible(info)) {
    // PR #97081: no local endpoint falls back to the cluster set, never a DROP; no SNAT.
    const eps = sps.localEndpoints.length > 0 ? sps.localEndpoints : sps.clusterEndpoints;
    return forward(sps, eps, false);
  }
  return forward(sps, sps.clusterEndpoints, true);
}

function externalDecision(
  hit: ServiceHit,
  packet: TracePacket,
  options: ModelOptions,
): TraceDecision {
  const { sps } = hit;
  if (options.mode === "ipvs") return ipvsExternalDecision(sps);
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
