/**
 * The last guard before a value reaches a rule in any mode: lib/proxy validates objects from
 * the API and manifests, and this re-checks each service port where its values are written,
 * so nothing that could break out of a rule, a quoted comment or a name is ever rendered.
 */
import { ipFamily, joinHostPort, parseCIDR } from "../net/mod.ts";
import { type IPFamily, servicePortNameString, type ServicePortState } from "./types.ts";

/** A service port left out of the rules because a value could not be trusted. */
export interface SkippedServicePort {
  readonly key: string;
  readonly reason: string;
}

const DNS_LABELISH = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/;
const PORT_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function validPort(p: number): boolean {
  return Number.isInteger(p) && p >= 1 && p <= 65535;
}

/** Why a service port must not reach a rule, or null when every value is safe to write. */
export function untrustedValue(sps: ServicePortState, family: IPFamily): string | null {
  const info = sps.info;
  const n = info.name;
  if (!DNS_LABELISH.test(n.namespace) || !DNS_LABELISH.test(n.name)) {
    return `bad name "${servicePortNameString(n)}"`;
  }
  if (n.port !== "" && !PORT_NAME.test(n.port)) return `bad port name "${n.port}"`;
  if (!["TCP", "UDP", "SCTP"].includes(info.protocol)) return `bad protocol "${info.protocol}"`;
  if (ipFamily(info.clusterIP) !== family) return `bad cluster IP "${info.clusterIP}"`;
  if (!validPort(info.port)) return `bad port "${info.port}"`;
  if (info.nodePort !== 0 && !validPort(info.nodePort)) return `bad node port "${info.nodePort}"`;
  if (info.healthCheckNodePort !== 0 && !validPort(info.healthCheckNodePort)) {
    return `bad health check node port "${info.healthCheckNodePort}"`;
  }
  if (!Number.isInteger(info.stickyMaxAgeSeconds) || info.stickyMaxAgeSeconds < 0) {
    return `bad session affinity timeout "${info.stickyMaxAgeSeconds}"`;
  }
  for (const ip of [...info.externalIPs, ...info.loadBalancerIPs]) {
    if (ipFamily(ip) !== family) return `bad external address "${ip}"`;
  }
  for (const range of info.loadBalancerSourceRanges) {
    const c = parseCIDR(range);
    if (c === null || c.family !== family) {
      return `bad source range "${range}"`;
    }
  }
  for (const ep of sps.allReachableEndpoints) {
    if (
      ipFamily(ep.ip) !== family || !validPort(ep.port) ||
      ep.address !== joinHostPort(ep.ip, ep.port)
    ) {
      return `bad endpoint "${ep.address}"`;
    }
  }
  return null;
}
