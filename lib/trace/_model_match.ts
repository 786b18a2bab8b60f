/**
 * Which service port (if any) a packet's destination names, and through which kind of
 * address: the first half of the reference model. Service ports are looked at in sorted key
 * order (the order every mode writes them), VIPs before NodePorts, as upstream's KUBE-SERVICES
 * sends NodePorts last.
 */
import { isLoopbackIP } from "../net/mod.ts";
import { type ProxyState, type ServicePortState, untrustedValue } from "../proxy/mod.ts";
import type { TracePacket } from "./decision.ts";
import { inCIDR, type ModelOptions } from "./model_options.ts";

/** The kind of service address a packet was sent to. */
export type HitKind = "cluster-ip" | "external-ip" | "load-balancer" | "node-port";

/** A destination that names a service port. */
export interface ServiceHit {
  readonly sps: ServicePortState;
  readonly kind: HitKind;
  /** For node-port: the nat rules capture it (false = only the filter REJECT/DROP applies). */
  readonly captured: boolean;
}

/** True when `to` accepts NodePort traffic in the model's mode. */
export function servesNodePort(to: string, options: ModelOptions): boolean {
  if (options.nodePortIPs !== null) return options.nodePortIPs.includes(to);
  if (!options.localAddresses.includes(to)) return false;
  if (isLoopbackIP(to)) return to !== "::1" && options.localhostNodePorts;
  return true;
}

const trustedCache = new WeakMap<ProxyState, readonly ServicePortState[]>();

/** The service ports a renderer writes, in its order (untrusted ones are skipped by all). */
export function trustedServicePorts(state: ProxyState): readonly ServicePortState[] {
  const cached = trustedCache.get(state);
  if (cached !== undefined) return cached;
  const out: ServicePortState[] = [];
  for (const key of [...state.services.keys()].sort()) {
    const sps = state.services.get(key)!;
    if (untrustedValue(sps, state.family) === null) out.push(sps);
  }
  trustedCache.set(state, out);
  return out;
}

/**
 * The service port the packet hits, or null. In iptables mode a NodePort without (local)
 * endpoints is refused on every local address (the filter rule matches `--dst-type LOCAL`),
 * even where the nat rules do not capture NodePorts; the other modes refuse where they serve.
 */
export function findServiceHit(
  ports: readonly ServicePortState[],
  packet: TracePacket,
  options: ModelOptions,
): ServiceHit | null {
  const protocol = packet.protocol.toUpperCase();
  for (const sps of ports) {
    const info = sps.info;
    if (info.protocol !== protocol || info.port !== packet.port) continue;
    if (info.clusterIP === packet.to) return { sps, kind: "cluster-ip", captured: true };
    if (info.externalIPs.includes(packet.to)) return { sps, kind: "external-ip", captured: true };
    if (info.loadBalancerIPs.includes(packet.to)) {
      return { sps, kind: "load-balancer", captured: true };
    }
  }
  const served = servesNodePort(packet.to, options);
  const local = options.localAddresses.includes(packet.to);
  if (!served && !(options.mode === "iptables" && local)) return null;
  for (const sps of ports) {
    const info = sps.info;
    if (info.protocol !== protocol || info.nodePort !== packet.port) continue;
    return { sps, kind: "node-port", captured: served };
  }
  return null;
}

/**
 * True when the destination is a service IP on a port no service uses and the mode refuses
 * it: nftables for ClusterIPs, IPVS (KUBE-IPVS-FILTER) for every address it binds.
 */
export function isUnusedServicePort(
  ports: readonly ServicePortState[],
  packet: TracePacket,
  options: ModelOptions,
): boolean {
  if (options.mode === "iptables") return false;
  return ports.some((sps) =>
    sps.info.clusterIP === packet.to ||
    (options.mode === "ipvs" &&
      (sps.info.externalIPs.includes(packet.to) || sps.info.loadBalancerIPs.includes(packet.to)))
  );
}

/**
 * nftables mode only: a new connection to an address of one of the family's ServiceCIDRs that
 * no ClusterIP holds (cluster-ips-check, after its reject). Local addresses take the input hook,
 * which has no such check.
 */
export function isUnallocatedClusterIP(
  state: ProxyState,
  packet: TracePacket,
  options: ModelOptions,
): boolean {
  if (options.mode !== "nftables" || options.localAddresses.includes(packet.to)) return false;
  return state.serviceCIDRs.some((cidr) => inCIDR(cidr, packet.to));
}
