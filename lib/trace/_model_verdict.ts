/**
 * The verdicts the reference model hands out, shared by its iptables/nftables path (model.ts)
 * and its IPVS path (model_ipvs.ts): forward in equal shares, refuse with a reason, and the
 * pod-traffic test that decides ClusterIP masquerading. Pure.
 */
import { type Endpoint, servicePortNameString, type ServicePortState } from "../proxy/mod.ts";
import type { TraceDecision, TraceDropReason, TracePacket } from "./decision.ts";
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

/** A forward decision for `sps` over `endpoints` in equal shares. */
export function forward(
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

/** A reject or drop decision for `sps` (null: an unused port of a service IP). */
export function refuse(
  kind: "reject" | "drop",
  sps: ServicePortState | null,
  reason: TraceDropReason,
): TraceDecision {
  return { kind, servicePort: sps === null ? "" : servicePortNameString(sps.info.name), reason };
}

/** The source is one of this cluster's pods, as the configured detector tells. */
export function fromPod(packet: TracePacket, options: ModelOptions): boolean {
  const match = options.podTraffic;
  if (match === null) return false;
  if (match === "interface") return packet.source === "pod";
  return inCIDR(match.cidr, packet.from);
}

/** Traffic to a ClusterIP from outside the pod network is masqueraded (or all of it). */
export function clusterMasquerade(packet: TracePacket, options: ModelOptions): boolean {
  if (options.masqueradeAll) return true;
  if (options.podTraffic === null) return false;
  if (options.mode === "ipvs" && packet.from.startsWith("127.")) return false;
  return !fromPod(packet, options);
}
