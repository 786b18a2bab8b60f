/**
 * Turns a raw, untrusted V1Service into validated ServicePorts per IP family (upstream's
 * serviceToServiceMap + newBaseServiceInfo), rejecting the whole object on any bad value.
 */
import type { V1Service } from "@kubernetes/client-node";
import { canonicalIP, cidrString, ipFamily, parseCIDR } from "../net/mod.ts";
import type { IPFamily, Protocol, ServicePort } from "./types.ts";
import { servicePortKey } from "./types.ts";
import {
  dnsLabel,
  invalid,
  isDNS1123Label,
  optArray,
  optPortNumber,
  optRecord,
  optString,
  portNumber,
  rawObjectKey,
  runValidation,
  type Validation,
} from "./_validation_rules.ts";

/** A Service after validation: its identity and the ServicePorts it yields in each family. */
export interface ValidatedService {
  readonly namespace: string;
  readonly name: string;
  /** `namespace/name`. */
  readonly key: string;
  /**
   * The ports per family; empty for a family without a cluster IP, and for every family when
   * kube-proxy ignores the service (ExternalName, headless, no cluster IP).
   */
  readonly ports: Readonly<Record<IPFamily, readonly ServicePort[]>>;
}

/** Protocols a Service port may carry. */
export const PROTOCOLS: readonly Protocol[] = ["TCP", "UDP", "SCTP"];
/** Upstream's default ClientIP affinity timeout (3 hours). */
export const DEFAULT_STICKY_MAX_AGE_SECONDS = 10800;
/** The API server's upper bound for sessionAffinityConfig.clientIP.timeoutSeconds (1 day). */
export const MAX_STICKY_MAX_AGE_SECONDS = 86400;

const SERVICE_TYPES = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];
const TRAFFIC_POLICIES = ["Cluster", "Local"];
const FAMILIES: readonly IPFamily[] = ["IPv4", "IPv6"];

/** Reads a protocol field, defaulting to TCP as the API server does. */
export function readProtocol(value: unknown, field: string): Protocol {
  const s = optString(value, field) ?? "TCP";
  if (!(PROTOCOLS as readonly string[]).includes(s)) {
    invalid(field, value, "is not a valid protocol: expected TCP, UDP or SCTP");
  }
  return s as Protocol;
}

/** Reads an optional port name: "" or a DNS-1123 label. */
export function readPortName(value: unknown, field: string): string {
  const s = optString(value, field) ?? "";
  if (s !== "" && !isDNS1123Label(s)) {
    invalid(field, value, "is not a valid port name: expected a DNS-1123 label");
  }
  return s;
}

function oneOf(value: unknown, field: string, allowed: readonly string[], dflt: string): string {
  const s = optString(value, field) ?? dflt;
  if (!allowed.includes(s)) {
    invalid(field, value, `is not valid: expected one of ${allowed.join(", ")}`);
  }
  return s;
}

function readIP(value: unknown, field: string): string {
  const s = optString(value, field);
  const ip = s === undefined ? null : canonicalIP(s);
  if (ip === null) invalid(field, value, "is not a valid IP address");
  return ip;
}

function byFamily<T>(): Record<IPFamily, T[]> {
  return { IPv4: [], IPv6: [] };
}

/**
 * Validates a Service. ExternalName and headless services (clusterIP "" or "None") are valid
 * but yield no ports; any malformed field rejects the whole object with a reason naming it.
 */
export function validateService(service: V1Service): Validation<ValidatedService> {
  return runValidation(() => `Service ${JSON.stringify(rawObjectKey(service?.metadata))}`, () => {
    const meta = optRecord(service?.metadata, "metadata");
    const namespace = dnsLabel(meta.namespace, "metadata.namespace");
    const name = dnsLabel(meta.name, "metadata.name");
    const key = `${namespace}/${name}`;
    const none: ValidatedService = { namespace, name, key, ports: { IPv4: [], IPv6: [] } };

    const spec = optRecord(service.spec, "spec");
    const type = oneOf(spec.type, "spec.type", SERVICE_TYPES, "ClusterIP");
    if (type === "ExternalName") return none;

    const clusterIP = optString(spec.clusterIP, "spec.clusterIP") ?? "";
    const clusterIPs = optArray(spec.clusterIPs, "spec.clusterIPs");
    const primary = clusterIP !== "" ? clusterIP : clusterIPs[0] ?? "";
    if (primary === "" || primary === "None") return none;

    const familyIP: Record<IPFamily, string | undefined> = { IPv4: undefined, IPv6: undefined };
    const primaryIP = clusterIP === "" ? undefined : readIP(clusterIP, "spec.clusterIP");
    clusterIPs.forEach((raw, i) => {
      const ip = readIP(raw, `spec.clusterIPs[${i}]`);
      if (i === 0 && primaryIP !== undefined && ip !== primaryIP) {
        invalid(
          "spec.clusterIPs[0]",
          raw,
          `does not match spec.clusterIP ${JSON.stringify(clusterIP)}`,
        );
      }
      const fam = ipFamily(ip)!;
      familyIP[fam] ??= ip;
    });
    if (clusterIPs.length === 0 && primaryIP !== undefined) {
      familyIP[ipFamily(primaryIP)!] = primaryIP;
    }

    const externalIPs = byFamily<string>();
    optArray(spec.externalIPs, "spec.externalIPs").forEach((raw, i) => {
      const ip = readIP(raw, `spec.externalIPs[${i}]`);
      const list = externalIPs[ipFamily(ip)!];
      if (!list.includes(ip)) list.push(ip);
    });

    const status = optRecord(service.status, "status");
    const lb = optRecord(status.loadBalancer, "status.loadBalancer");
    const lbIPs = byFamily<string>();
    optArray(lb.ingress, "status.loadBalancer.ingress").forEach((rawIng, i) => {
      const field = `status.loadBalancer.ingress[${i}]`;
      const ing = optRecord(rawIng, field);
      const ipText = optString(ing.ip, `${field}.ip`) ?? "";
      const mode = oneOf(ing.ipMode, `${field}.ipMode`, ["VIP", "Proxy"], "VIP");
      if (ipText === "") return;
      const ip = readIP(ipText, `${field}.ip`);
      if (mode === "Proxy") return;
      const list = lbIPs[ipFamily(ip)!];
      if (!list.includes(ip)) list.push(ip);
    });

    const sourceRanges = byFamily<string>();
    optArray(spec.loadBalancerSourceRanges, "spec.loadBalancerSourceRanges").forEach((raw, i) => {
      const field = `spec.loadBalancerSourceRanges[${i}]`;
      const text = optString(raw, field);
      const cidr = text === undefined ? null : parseCIDR(text.trim());
      if (cidr === null) {
        invalid(field, raw, "is not a valid CIDR: expected a block such as 203.0.113.0/24");
      }
      const list = sourceRanges[cidr.family];
      const s = cidrString(cidr);
      if (!list.includes(s)) list.push(s);
    });

    const affinity = oneOf(
      spec.sessionAffinity,
      "spec.sessionAffinity",
      ["None", "ClientIP"],
      "None",
    );
    let stickyMaxAgeSeconds = 0;
    if (affinity === "ClientIP") {
      const cfg = optRecord(spec.sessionAffinityConfig, "spec.sessionAffinityConfig");
      const clientIP = optRecord(cfg.clientIP, "spec.sessionAffinityConfig.clientIP");
      const field = "spec.sessionAffinityConfig.clientIP.timeoutSeconds";
      const t = clientIP.timeoutSeconds;
      if (t === undefined || t === null) stickyMaxAgeSeconds = DEFAULT_STICKY_MAX_AGE_SECONDS;
      else if (
        typeof t !== "number" || !Number.isInteger(t) || t < 1 || t > MAX_STICKY_MAX_AGE_SECONDS
      ) {
        invalid(
          field,
          t,
          `is not valid: expected an integer from 1 to ${MAX_STICKY_MAX_AGE_SECONDS}`,
        );
      } else stickyMaxAgeSeconds = t;
    }

    const etp = oneOf(
      spec.externalTrafficPolicy,
      "spec.externalTrafficPolicy",
      TRAFFIC_POLICIES,
      "Cluster",
    );
    const itp = oneOf(
      spec.internalTrafficPolicy,
      "spec.internalTrafficPolicy",
      TRAFFIC_POLICIES,
      "Cluster",
    );
    const healthCheckPort = optPortNumber(spec.healthCheckNodePort, "spec.healthCheckNodePort");
    const anyExternalIPs = externalIPs.IPv4.length + externalIPs.IPv6.length > 0;
    // Upstream decides on the whole Service (its type), not per family.
    const accessible = type === "LoadBalancer" || type === "NodePort" || anyExternalIPs;
    const externalPolicyLocal = accessible && etp === "Local";
    const internalPolicyLocal = itp === "Local";
    const healthCheckNodePort = type === "LoadBalancer" && externalPolicyLocal
      ? healthCheckPort
      : 0;

    const ports = byFamily<ServicePort>();
    const seen = new Map<string, number>();
    optArray(spec.ports, "spec.ports").forEach((rawPort, i) => {
      const field = `spec.ports[${i}]`;
      const p = optRecord(rawPort, field);
      const portName = readPortName(p.name, `${field}.name`);
      const protocol = readProtocol(p.protocol, `${field}.protocol`);
      const port = portNumber(p.port, `${field}.port`);
      const nodePort = optPortNumber(p.nodePort, `${field}.nodePort`);
      const spn = { namespace, name, port: portName, protocol };
      const spKey = servicePortKey(spn);
      const dup = seen.get(spKey);
      if (dup !== undefined) {
        invalid(
          `${field}.name`,
          portName,
          `duplicates spec.ports[${dup}]: expected a unique name per protocol`,
        );
      }
      seen.set(spKey, i);
      for (const fam of FAMILIES) {
        const ip = familyIP[fam];
        if (ip === undefined) continue;
        ports[fam].push({
          name: spn,
          clusterIP: ip,
          port,
          protocol,
          nodePort,
          externalIPs: externalIPs[fam],
          loadBalancerIPs: lbIPs[fam],
          loadBalancerSourceRanges: sourceRanges[fam],
          stickyMaxAgeSeconds,
          externalPolicyLocal,
          internalPolicyLocal,
          healthCheckNodePort,
        });
      }
    });
    return { namespace, name, key, ports };
  });
}

/** The ServicePorts one family's proxier programs for `service` (upstream's ServicePortMap). */
export function servicePortsForFamily(
  service: V1Service,
  family: IPFamily,
): Validation<readonly ServicePort[]> {
  const res = validateService(service);
  return res.ok ? { ok: true, value: res.value.ports[family] } : res;
}
