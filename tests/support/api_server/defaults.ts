/** Defaulting and allocation the real API server applies on create (Service IPs, node ports). */
import { isIPv6 } from "./validation.ts";

// deno-lint-ignore no-explicit-any
type Obj = any;

/** Hands out ClusterIPs from 172.30.0.0/16 and node ports from 30000-32767, as the real one does. */
export class Allocator {
  #nextIp = 10;
  #nextNodePort = 30000;
  readonly #usedIps = new Set<string>();
  readonly #usedPorts = new Set<number>();

  /** Remembers addresses and ports given explicitly so they are never handed out again. */
  reserve(svc: Obj): void {
    for (const ip of svc?.spec?.clusterIPs ?? [svc?.spec?.clusterIP]) {
      if (typeof ip === "string") this.#usedIps.add(ip);
    }
    for (const p of svc?.spec?.ports ?? []) {
      if (Number.isInteger(p?.nodePort) && p.nodePort > 0) this.#usedPorts.add(p.nodePort);
    }
  }

  /** A free ClusterIP from 172.30.0.0/16. */
  clusterIP(): string {
    for (;;) {
      const n = this.#nextIp++;
      const ip = `172.30.${(n >> 8) & 255}.${n & 255}`;
      if (!this.#usedIps.has(ip) && (n & 255) !== 0 && (n & 255) !== 255) {
        this.#usedIps.add(ip);
        return ip;
      }
    }
  }

  /** A free node port. */
  nodePort(): number {
    while (this.#usedPorts.has(this.#nextNodePort)) this.#nextNodePort++;
    this.#usedPorts.add(this.#nextNodePort);
    return this.#nextNodePort++;
  }
}

/** Fills the Service fields the real server defaults, allocating IPs and node ports. */
export function defaultService(svc: Obj, alloc: Allocator): void {
  const spec = svc.spec ??= {};
  spec.type ??= "ClusterIP";
  spec.sessionAffinity ??= "None";
  for (const p of spec.ports ?? []) {
    if (typeof p !== "object" || p === null) continue;
    p.protocol ??= "TCP";
    p.targetPort ??= p.port;
  }
  if (spec.type === "ExternalName") return;
  alloc.reserve(svc);
  if (spec.clusterIP === undefined || spec.clusterIP === "") {
    spec.clusterIP = spec.clusterIPs?.[0] ?? alloc.clusterIP();
  }
  spec.clusterIPs ??= [spec.clusterIP];
  if (spec.clusterIP !== "None") {
    spec.ipFamilies ??= spec.clusterIPs.map((ip: unknown) => isIPv6(ip) ? "IPv6" : "IPv4");
    spec.ipFamilyPolicy ??= spec.clusterIPs.length > 1 ? "RequireDualStack" : "SingleStack";
  }
  spec.internalTrafficPolicy ??= "Cluster";
  if (spec.type === "NodePort" || spec.type === "LoadBalancer") {
    spec.externalTrafficPolicy ??= "Cluster";
    for (const p of spec.ports ?? []) {
      if (typeof p === "object" && p !== null && (p.nodePort === undefined || p.nodePort === 0)) {
        p.nodePort = alloc.nodePort();
      }
    }
  }
}

/** Fills the EndpointSlice fields the real server defaults. */
export function defaultEndpointSlice(slice: Obj): void {
  for (const p of slice.ports ?? []) {
    if (typeof p === "object" && p !== null) p.protocol ??= "TCP";
  }
}
