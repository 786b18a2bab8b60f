/**
 * A core/v1 Service from its protobuf encoding, with the members lib/proxy/validate_service.ts
 * reads, in their JSON shape (see _protobuf_meta.ts). Field numbers are those of
 * k8s.io/api/core/v1/generated.proto; every other field is passed over unread.
 */
import { readObjectMeta, setNumber, setString } from "./_protobuf_meta.ts";
import type { ProtoReader } from "./_protobuf_wire.ts";

/** Appends a repeated string field's next value to `target[key]`. */
function pushString(target: Record<string, unknown>, key: string, r: ProtoReader): void {
  ((target[key] ??= []) as string[]).push(r.string());
}

function pushObject(target: Record<string, unknown>, key: string, value: unknown): void {
  ((target[key] ??= []) as unknown[]).push(value);
}

function readServicePort(r: ProtoReader): Record<string, unknown> {
  const port: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) setString(port, "name", r.sharedString());
    else if (f === 2) setString(port, "protocol", r.sharedString());
    // `port` has no omitempty: JSON writes it even when 0.
    else if (f === 3) port.port = r.int32();
    else if (f === 5) setNumber(port, "nodePort", r.int32());
    else r.skip();
  }
  return port;
}

/** sessionAffinityConfig: its clientIP and that one's timeoutSeconds are pointers in Go. */
function readSessionAffinityConfig(r: ProtoReader): Record<string, unknown> {
  const config: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f !== 1) {
      r.skip();
      continue;
    }
    const c = r.message(), clientIP: Record<string, unknown> = {};
    for (let g = c.next(); g !== 0; g = c.next()) {
      if (g === 1) clientIP.timeoutSeconds = c.int32();
      else c.skip();
    }
    config.clientIP = clientIP;
  }
  return config;
}

function readSpec(r: ProtoReader): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    switch (f) {
      case 1:
        pushObject(spec, "ports", readServicePort(r.message()));
        break;
      case 3:
        setString(spec, "clusterIP", r.string());
        break;
      case 4:
        setString(spec, "type", r.sharedString());
        break;
      case 5:
        pushString(spec, "externalIPs", r);
        break;
      case 7:
        setString(spec, "sessionAffinity", r.sharedString());
        break;
      case 9:
        pushString(spec, "loadBalancerSourceRanges", r);
        break;
      case 11:
        setString(spec, "externalTrafficPolicy", r.sharedString());
        break;
      case 12:
        setNumber(spec, "healthCheckNodePort", r.int32());
        break;
      case 14:
        spec.sessionAffinityConfig = readSessionAffinityConfig(r.message());
        break;
      case 18:
        pushString(spec, "clusterIPs", r);
        break;
      case 22:
        // A pointer in Go: sent, and written to JSON, whenever set.
        spec.internalTrafficPolicy = r.sharedString();
        break;
      default:
        r.skip();
    }
  }
  return spec;
}

function readIngress(r: ProtoReader): Record<string, unknown> {
  const ingress: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) setString(ingress, "ip", r.string());
    else if (f === 2) setString(ingress, "hostname", r.string());
    else if (f === 3) ingress.ipMode = r.string(); // a pointer in Go
    else r.skip();
  }
  return ingress;
}

function readServiceStatus(r: ProtoReader): Record<string, unknown> {
  const status: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f !== 1) {
      r.skip();
      continue;
    }
    const lb = r.message(), loadBalancer: Record<string, unknown> = {};
    for (let g = lb.next(); g !== 0; g = lb.next()) {
      if (g === 1) pushObject(loadBalancer, "ingress", readIngress(lb.message()));
      else lb.skip();
    }
    status.loadBalancer = loadBalancer;
  }
  return status;
}

/** Reads one Service. */
export function readService(r: ProtoReader): Record<string, unknown> {
  const service: Record<string, unknown> = {};
  for (let f = r.next(); f !== 0; f = r.next()) {
    if (f === 1) service.metadata = readObjectMeta(r.message());
    else if (f === 2) service.spec = readSpec(r.message());
    else if (f === 3) service.status = readServiceStatus(r.message());
    else r.skip();
  }
  return service;
}
