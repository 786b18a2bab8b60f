/**
 * Turns a raw, untrusted V1EndpointSlice into the few fields kube-proxy uses, rejecting the whole
 * slice on any bad value. Condition defaults follow upstream's EndpointSliceCache.
 */
import type { V1EndpointSlice } from "@kubernetes/client-node";
import { canonicalIP } from "../net/mod.ts";
import type { IPFamily, Protocol } from "./types.ts";
import { readPortName, readProtocol } from "./validate_service.ts";
import {
  dnsLabel,
  dnsSubdomain,
  invalid,
  isDNS1123Subdomain,
  isLabelValue,
  optArray,
  optBool,
  optRecord,
  optString,
  optStringMap,
  portNumber,
  rawObjectKey,
  runValidation,
  type Validation,
} from "./_validation_rules.ts";

/** Label naming the Service an EndpointSlice belongs to. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";
/** Annotation with the time of the change that caused the slice update (for latency metrics). */
export const LAST_CHANGE_TRIGGER_TIME_ANNOTATION =
  "endpoints.kubernetes.io/last-change-trigger-time";

/** One port of a slice; it joins a Service port with the same name and protocol. */
export interface SlicePort {
  readonly name: string;
  readonly port: number;
  readonly protocol: Protocol;
}

/** One endpoint of a slice, before it is combined with a port. */
export interface SliceEndpoint {
  /** The first address, canonical (upstream uses only the first). */
  readonly ip: string;
  /** Conditions with upstream's nil defaults: ready true, serving true, terminating false. */
  readonly ready: boolean;
  readonly serving: boolean;
  readonly terminating: boolean;
  /** "" when unset. */
  readonly nodeName: string;
  /** "" when unset. */
  readonly zone: string;
  /** Sorted, deduplicated hint names. */
  readonly zoneHints: readonly string[];
  readonly nodeHints: readonly string[];
}

/** An EndpointSlice after validation. */
export interface ValidatedEndpointSlice {
  readonly namespace: string;
  /** The slice's own name. */
  readonly name: string;
  /** `namespace/name` of the slice. */
  readonly key: string;
  readonly serviceName: string;
  /** `namespace/serviceName`: the Service this slice feeds. */
  readonly serviceKey: string;
  /** null for FQDN slices, which kube-proxy ignores. */
  readonly addressType: IPFamily | null;
  /** Ports with a port number (upstream skips ports without one). */
  readonly ports: readonly SlicePort[];
  /** Endpoints with at least one address (upstream skips empty ones). */
  readonly endpoints: readonly SliceEndpoint[];
}

/** The hints of an endpoint without any: one shared array, not two per endpoint. */
const NO_HINTS: readonly string[] = Object.freeze([]);

function hintNames(
  value: unknown,
  field: string,
  check: (s: string) => boolean,
): readonly string[] {
  if (value === undefined || value === null) return NO_HINTS;
  const names = new Set<string>();
  optArray(value, field).forEach((raw, i) => {
    const f = `${field}[${i}].name`;
    const name = optString(optRecord(raw, `${field}[${i}]`).name, f);
    if (name === undefined || name === "" || !check(name)) invalid(f, name, "is not a valid name");
    names.add(name);
  });
  return names.size === 0 ? NO_HINTS : [...names].sort();
}

function readEndpoint(raw: unknown, field: string, family: IPFamily): SliceEndpoint | null {
  const ep = optRecord(raw, field);
  const addresses = optArray(ep.addresses, `${field}.addresses`);
  let first: string | null = null;
  for (let i = 0; i < addresses.length; i++) {
    const a = addresses[i];
    const ip = typeof a === "string" ? canonicalIP(a) : null;
    if (ip === null) {
      // A value that is not a string is reported as such, any other as not an address.
      optString(a, `${field}.addresses[${i}]`);
      invalid(`${field}.addresses[${i}]`, a, "is not a valid IP address");
    }
    // Canonical text: IPv6 has a colon, IPv4 has none.
    if (ip.includes(":") !== (family === "IPv6")) {
      invalid(
        `${field}.addresses[${i}]`,
        a,
        `is not an ${family} address: expected addressType ${family}`,
      );
    }
    first ??= ip;
  }
  const cond = optRecord(ep.conditions, `${field}.conditions`);
  const ready = optBool(cond.ready, `${field}.conditions.ready`) ?? true;
  const serving = optBool(cond.serving, `${field}.conditions.serving`) ?? true;
  const terminating = optBool(cond.terminating, `${field}.conditions.terminating`) ?? false;
  const nodeName = optString(ep.nodeName, `${field}.nodeName`) ?? "";
  if (nodeName !== "" && !isDNS1123Subdomain(nodeName)) {
    invalid(
      `${field}.nodeName`,
      nodeName,
      "is not a valid node name: expected a DNS-1123 subdomain",
    );
  }
  const zone = optString(ep.zone, `${field}.zone`) ?? "";
  if (!isLabelValue(zone)) {
    invalid(`${field}.zone`, zone, "is not a valid zone: expected a label value");
  }
  const hints = optRecord(ep.hints, `${field}.hints`);
  const zoneHints = hintNames(hints.forZones, `${field}.hints.forZones`, isLabelValue);
  const nodeHints = hintNames(hints.forNodes, `${field}.hints.forNodes`, isDNS1123Subdomain);
  if (first === null) return null;
  return { ip: first, ready, serving, terminating, nodeName, zone, zoneHints, nodeHints };
}

/**
 * Validates an EndpointSlice. It must name its Service in the `kubernetes.io/service-name`
 * label; addresses must match addressType; FQDN slices are valid but carry nothing.
 */
export function validateEndpointSlice(slice: V1EndpointSlice): Validation<ValidatedEndpointSlice> {
  return runValidation(
    () => `EndpointSlice ${JSON.stringify(rawObjectKey(slice?.metadata))}`,
    () => {
      const meta = optRecord(slice?.metadata, "metadata");
      const namespace = dnsLabel(meta.namespace, "metadata.namespace");
      const name = dnsSubdomain(meta.name, "metadata.name");
      const labels = optStringMap(meta.labels, "metadata.labels");
      const serviceName = dnsLabel(
        labels[SERVICE_NAME_LABEL],
        `metadata.labels[${JSON.stringify(SERVICE_NAME_LABEL)}]`,
      );
      const base = {
        namespace,
        name,
        key: `${namespace}/${name}`,
        serviceName,
        serviceKey: `${namespace}/${serviceName}`,
      };
      const addressType = optString(slice.addressType, "addressType");
      if (addressType === "FQDN") return { ...base, addressType: null, ports: [], endpoints: [] };
      if (addressType !== "IPv4" && addressType !== "IPv6") {
        invalid("addressType", slice.addressType, "is not valid: expected IPv4, IPv6 or FQDN");
      }
      const ports: SlicePort[] = [];
      optArray(slice.ports, "ports").forEach((raw, i) => {
        const p = optRecord(raw, `ports[${i}]`);
        const portName = readPortName(p.name, `ports[${i}].name`);
        const protocol = readProtocol(p.protocol, `ports[${i}].protocol`);
        if (p.port === undefined || p.port === null) return;
        ports.push({ name: portName, port: portNumber(p.port, `ports[${i}].port`), protocol });
      });
      const endpoints: SliceEndpoint[] = [];
      const raws = optArray(slice.endpoints, "endpoints");
      for (let i = 0; i < raws.length; i++) {
        const ep = readEndpoint(raws[i], `endpoints[${i}]`, addressType);
        if (ep !== null) endpoints.push(ep);
      }
      return { ...base, addressType, ports, endpoints };
    },
  );
}

/**
 * The slice's last-change-trigger-time annotation in epoch ms, or undefined when absent or
 * unparsable (upstream logs and skips those too).
 */
export function lastChangeTriggerTime(slice: V1EndpointSlice): number | undefined {
  const annotations = slice?.metadata?.annotations;
  const raw: unknown = annotations?.[LAST_CHANGE_TRIGGER_TIME_ANNOTATION];
  if (typeof raw !== "string" || !/^\d{4}-\d{2}-\d{2}T/.test(raw)) return undefined;
  const t = Date.parse(raw);
  return Number.isNaN(t) ? undefined : t;
}
