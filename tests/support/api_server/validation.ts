/**
 * Object validation like the real API server's, for the fields kube-proxy reads. Returns the
 * field errors; an empty list means valid. Kept independent of lib/ on purpose: the server is
 * the referee the client is tested against.
 */
import type { StatusCause } from "./status.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const IANA_SVC_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const PROTOCOLS = ["TCP", "UDP", "SCTP"];

/** True for a dotted-quad IPv4 address without leading zeros. */
export function isIPv4(s: unknown): boolean {
  if (typeof s !== "string") return false;
  const parts = s.split(".");
  return parts.length === 4 &&
    parts.every((p) => /^(0|[1-9][0-9]{0,2})$/.test(p) && Number(p) <= 255);
}

/** True for an IPv6 address (no zone, no brackets). */
export function isIPv6(s: unknown): boolean {
  if (typeof s !== "string" || !s.includes(":") || /[\[\]%/\s]/.test(s)) return false;
  try {
    new URL(`http://[${s}]/`);
    return true;
  } catch {
    return false;
  }
}

/** True for an IPv4 or IPv6 address. */
export function isIP(s: unknown): boolean {
  return isIPv4(s) || isIPv6(s);
}

/** True for a CIDR such as 10.0.0.0/8 or fd00::/64. */
export function isCIDR(s: unknown): boolean {
  if (typeof s !== "string") return false;
  const [ip, bits, extra] = s.split("/");
  if (extra !== undefined || bits === undefined || !/^\d{1,3}$/.test(bits)) return false;
  if (isIPv4(ip)) return Number(bits) <= 32;
  return isIPv6(ip) && Number(bits) <= 128;
}

class Errors {
  readonly list: StatusCause[] = [];
  add(field: string, reason: string, message: string): void {
    this.list.push({ field, reason: `Field${reason}`, message });
  }
  invalid(field: string, value: unknown, why: string): void {
    this.add(field, "ValueInvalid", `Invalid value: ${JSON.stringify(value)}: ${why}`);
  }
  required(field: string): void {
    this.add(field, "ValueRequired", "Required value");
  }
  unsupported(field: string, value: unknown, allowed: readonly string[]): void {
    this.add(
      field,
      "ValueNotSupported",
      `Unsupported value: ${JSON.stringify(value)}: supported values: ${
        allowed.map((a) => `"${a}"`).join(", ")
      }`,
    );
  }
}

function validateMeta(o: Obj, e: Errors, namespaced: boolean, nameRe: RegExp, max: number) {
  const meta = o?.metadata;
  if (typeof meta !== "object" || meta === null) return e.required("metadata");
  if (typeof meta.name !== "string" || meta.name === "") e.required("metadata.name");
  else if (!nameRe.test(meta.name) || meta.name.length > max) {
    e.invalid("metadata.name", meta.name, "a lowercase RFC 1123/1035 name is required");
  }
  if (namespaced) {
    if (typeof meta.namespace !== "string" || meta.namespace === "") {
      e.required("metadata.namespace");
    } else if (!DNS1123_LABEL.test(meta.namespace) || meta.namespace.length > 63) {
      e.invalid("metadata.namespace", meta.namespace, "a lowercase RFC 1123 label is required");
    }
  }
  const labels = meta.labels ?? {};
  if (typeof labels !== "object" || Array.isArray(labels)) {
    e.invalid("metadata.labels", labels, "must be a map");
  } else {
    for (const [k, v] of Object.entries(labels)) {
      if (
        typeof v !== "string" || v.length > 63 ||
        !/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/.test(v)
      ) {
        e.invalid(`metadata.labels`, v, `label "${k}" needs a valid label value`);
      }
    }
  }
}

function validatePortNumber(e: Errors, field: string, v: unknown, allowZero: boolean) {
  const min = allowZero ? 0 : 1;
  if (!Number.isInteger(v) || (v as number) < min || (v as number) > 65535) {
    e.invalid(field, v, `must be between ${min} and 65535, inclusive`);
  }
}

/** Field errors of a core/v1 Service (after defaulting). */
export function validateService(s: Obj): StatusCause[] {
  const e = new Errors();
  validateMeta(s, e, true, DNS1035_LABEL, 63);
  const spec = s?.spec;
  if (typeof spec !== "object" || spec === null) {
    e.required("spec");
    return e.list;
  }
  const types = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName"];
  if (!types.includes(spec.type)) e.unsupported("spec.type", spec.type, types);
  const headless = spec.clusterIP === "None";
  if (spec.type !== "ExternalName") {
    if (
      spec.clusterIP !== undefined && spec.clusterIP !== "" && !headless && !isIP(spec.clusterIP)
    ) {
      e.invalid("spec.clusterIP", spec.clusterIP, 'must be a valid IP address or "None"');
    }
    for (const [i, ip] of (spec.clusterIPs ?? []).entries()) {
      if (!(i === 0 && ip === "None") && !isIP(ip)) {
        e.invalid(`spec.clusterIPs[${i}]`, ip, "must be a valid IP address");
      }
    }
    if (
      spec.clusterIPs?.[0] !== undefined && spec.clusterIP !== undefined &&
      spec.clusterIPs[0] !== spec.clusterIP
    ) {
      e.invalid("spec.clusterIPs[0]", spec.clusterIPs[0], "must match spec.clusterIP");
    }
    if (!headless && (!Array.isArray(spec.ports) || spec.ports.length === 0)) {
      e.required("spec.ports");
    }
  } else if (typeof spec.externalName !== "string" || spec.externalName === "") {
    e.required("spec.externalName");
  }
  const ports: Obj[] = Array.isArray(spec.ports) ? spec.ports : [];
  const names = new Set<string>();
  for (const [i, p] of ports.entries()) {
    const f = `spec.ports[${i}]`;
    if (ports.length > 1 && (typeof p.name !== "string" || p.name === "")) e.required(`${f}.name`);
    if (typeof p.name === "string" && p.name !== "") {
      if (!DNS1123_LABEL.test(p.name)) e.invalid(`${f}.name`, p.name, "must be a DNS label");
      if (names.has(p.name)) e.add(`${f}.name`, "ValueDuplicate", `Duplicate value: "${p.name}"`);
      names.add(p.name);
    }
    validatePortNumber(e, `${f}.port`, p.port, false);
    if (!PROTOCOLS.includes(p.protocol)) e.unsupported(`${f}.protocol`, p.protocol, PROTOCOLS);
    if (typeof p.targetPort === "string") {
      if (!IANA_SVC_NAME.test(p.targetPort) || p.targetPort.length > 15) {
        e.invalid(`${f}.targetPort`, p.targetPort, "must be a port number or IANA_SVC_NAME");
      }
    } else if (p.targetPort !== undefined) {
      validatePortNumber(e, `${f}.targetPort`, p.targetPort, false);
    }
    if (p.nodePort !== undefined) {
      validatePortNumber(e, `${f}.nodePort`, p.nodePort, true);
      if (p.nodePort !== 0 && spec.type !== "NodePort" && spec.type !== "LoadBalancer") {
        e.add(
          `${f}.nodePort`,
          "ValueForbidden",
          "Forbidden: may not be used when `type` is 'ClusterIP'",
        );
      }
    }
  }
  for (const [i, ip] of (spec.externalIPs ?? []).entries()) {
    if (!isIP(ip)) e.invalid(`spec.externalIPs[${i}]`, ip, "must be a valid IP address");
  }
  for (const [i, c] of (spec.loadBalancerSourceRanges ?? []).entries()) {
    if (!isCIDR(String(c).trim())) {
      e.invalid(`spec.loadBalancerSourceRanges[${i}]`, c, "must be a CIDR");
    }
  }
  const affinities = ["None", "ClientIP"];
  if (spec.sessionAffinity !== undefined && !affinities.includes(spec.sessionAffinity)) {
    e.unsupported("spec.sessionAffinity", spec.sessionAffinity, affinities);
  }
  const policies = ["Cluster", "Local"];
  for (const k of ["externalTrafficPolicy", "internalTrafficPolicy"]) {
    if (spec[k] !== undefined && spec[k] !== "" && !policies.includes(spec[k])) {
      e.unsupported(`spec.${k}`, spec[k], policies);
    }
  }
  for (const [i, ing] of (s?.status?.loadBalancer?.ingress ?? []).entries()) {
    if (ing?.ip !== undefined && !isIP(ing.ip)) {
      e.invalid(`status.loadBalancer.ingress[${i}].ip`, ing.ip, "must be a valid IP address");
    }
  }
  return e.list;
}

/** Field errors of a discovery.k8s.io/v1 EndpointSlice. */
export function validateEndpointSlice(s: Obj): StatusCause[] {
  const e = new Errors();
  validateMeta(s, e, true, DNS1123_SUBDOMAIN, 253);
  const types = ["IPv4", "IPv6", "FQDN"];
  if (!types.includes(s?.addressType)) e.unsupported("addressType", s?.addressType, types);
  const endpoints: Obj[] = Array.isArray(s?.endpoints) ? s.endpoints : [];
  if (endpoints.length > 1000) {
    e.add("endpoints", "TooMany", "Too many: must have at most 1000 items");
  }
  for (const [i, ep] of endpoints.entries()) {
    const f = `endpoints[${i}]`;
    const addrs: unknown[] = Array.isArray(ep?.addresses) ? ep.addresses : [];
    if (addrs.length < 1 || addrs.length > 100) {
      e.add(`${f}.addresses`, "ValueRequired", "must contain between 1 and 100 addresses");
    }
    for (const [j, a] of addrs.entries()) {
      const ok = s.addressType === "IPv4"
        ? isIPv4(a)
        : s.addressType === "IPv6"
        ? isIPv6(a)
        : typeof a === "string" && DNS1123_SUBDOMAIN.test(a);
      if (!ok) e.invalid(`${f}.addresses[${j}]`, a, `must be a valid ${s.addressType} address`);
    }
    for (const c of ["ready", "serving", "terminating"]) {
      const v = ep?.conditions?.[c];
      if (v !== undefined && v !== null && typeof v !== "boolean") {
        e.invalid(`${f}.conditions.${c}`, v, "must be a boolean");
      }
    }
  }
  const ports: Obj[] = Array.isArray(s?.ports) ? s.ports : [];
  const names = new Set<string>();
  for (const [i, p] of ports.entries()) {
    const f = `ports[${i}]`;
    const name = p?.name ?? "";
    if (name !== "" && (!DNS1123_LABEL.test(name) || name.length > 63)) {
      e.invalid(`${f}.name`, name, "must be a DNS label");
    }
    if (names.has(name)) e.add(`${f}.name`, "ValueDuplicate", `Duplicate value: "${name}"`);
    names.add(name);
    if (p?.port !== undefined && p?.port !== null) validatePortNumber(e, `${f}.port`, p.port, true);
    if (p?.protocol !== undefined && !PROTOCOLS.includes(p.protocol)) {
      e.unsupported(`${f}.protocol`, p.protocol, PROTOCOLS);
    }
  }
  return e.list;
}

/** Field errors of a core/v1 Node. */
export function validateNode(n: Obj): StatusCause[] {
  const e = new Errors();
  validateMeta(n, e, false, DNS1123_SUBDOMAIN, 253);
  for (const [i, c] of (n?.spec?.podCIDRs ?? []).entries()) {
    if (!isCIDR(c)) e.invalid(`spec.podCIDRs[${i}]`, c, "must be a CIDR");
  }
  const types = ["Hostname", "InternalIP", "ExternalIP", "InternalDNS", "ExternalDNS"];
  for (const [i, a] of (n?.status?.addresses ?? []).entries()) {
    if (!types.includes(a?.type)) e.unsupported(`status.addresses[${i}].type`, a?.type, types);
  }
  return e.list;
}

/** Field errors of an events.k8s.io/v1 Event at create. */
export function validateEvent(ev: Obj): StatusCause[] {
  const e = new Errors();
  validateMeta(ev, e, true, DNS1123_SUBDOMAIN, 253);
  for (const k of ["eventTime", "reportingController", "reportingInstance", "action", "reason"]) {
    if (typeof ev?.[k] !== "string" || ev[k] === "") e.required(k);
  }
  for (const k of ["action", "reason"]) {
    if (typeof ev?.[k] === "string" && ev[k].length > 128) {
      e.invalid(k, ev[k], "can have at most 128 characters");
    }
  }
  if (typeof ev?.note === "string" && ev.note.length > 1024) {
    e.invalid("note", "...", "can have at most 1024 bytes");
  }
  const types = ["Normal", "Warning"];
  if (!types.includes(ev?.type)) e.unsupported("type", ev?.type, types);
  const refNs = ev?.regarding?.namespace ?? "";
  const ns = ev?.metadata?.namespace;
  if (refNs === "" ? ns !== "default" : refNs !== ns) {
    e.invalid("metadata.namespace", ns, "does not match event.namespace of the regarding object");
  }
  return e.list;
}

/** The validator for a kind. */
export const VALIDATORS: Readonly<Record<string, (o: Obj) => StatusCause[]>> = {
  Service: validateService,
  EndpointSlice: validateEndpointSlice,
  Node: validateNode,
  Event: validateEvent,
};
