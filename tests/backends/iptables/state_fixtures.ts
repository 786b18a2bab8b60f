/**
 * ProxyState builders for the iptables tests.
 * IP plan: pods 10.0.0.0/8, service IPs 172.30.0.0/16, node 192.168.0.2, external client
 * 203.0.113.2; IPv6 services fd00:30::/108, pods fd00:10::/64.
 */
import { joinHostPort } from "../../../lib/net/mod.ts";
import {
  type Endpoint,
  type IPFamily,
  type Protocol,
  type ProxyState,
  type ServicePort,
  servicePortKey,
  type ServicePortState,
} from "../../../lib/proxy/mod.ts";

/** The node every fixture runs on. */
export const NODE_IP = "192.168.0.2";
/** IPv6 address of the same node. */
export const NODE_IP6 = "fd00:20::2";

/** Options for svc(): the service port's identity plus any ServicePort field. */
export type ServiceOptions = Partial<Omit<ServicePort, "name">> & {
  readonly namespace?: string;
  readonly name?: string;
  readonly portName?: string;
};

/** A ServicePort with upstream-like defaults (ns1/svc1:p80, TCP 80, ClusterIP only). */
export function svc(o: ServiceOptions = {}): ServicePort {
  const protocol: Protocol = o.protocol ?? "TCP";
  return {
    name: {
      namespace: o.namespace ?? "ns1",
      name: o.name ?? "svc1",
      port: o.portName ?? "p80",
      protocol,
    },
    clusterIP: o.clusterIP ?? "172.30.0.41",
    port: o.port ?? 80,
    protocol,
    nodePort: o.nodePort ?? 0,
    externalIPs: o.externalIPs ?? [],
    loadBalancerIPs: o.loadBalancerIPs ?? [],
    loadBalancerSourceRanges: o.loadBalancerSourceRanges ?? [],
    stickyMaxAgeSeconds: o.stickyMaxAgeSeconds ?? 0,
    externalPolicyLocal: o.externalPolicyLocal ?? false,
    internalPolicyLocal: o.internalPolicyLocal ?? false,
    healthCheckNodePort: o.healthCheckNodePort ?? 0,
  };
}

/** A ready endpoint; `isLocal` marks it as running on this node. */
export function ep(ip: string, port = 80, o: Partial<Endpoint> = {}): Endpoint {
  return {
    ip,
    port,
    address: joinHostPort(ip, port),
    ready: true,
    serving: true,
    terminating: false,
    isLocal: false,
    nodeName: o.isLocal ? "node1" : "node2",
    zone: "",
    zoneHints: [],
    nodeHints: [],
    ...o,
  };
}

/** Categorises endpoints the simple way (no topology, no terminating fallback). */
export function sps(info: ServicePort, endpoints: readonly Endpoint[] = []): ServicePortState {
  const ready = endpoints.filter((e) => e.ready);
  const local = ready.filter((e) => e.isLocal);
  const accessible = info.nodePort !== 0 || info.externalIPs.length > 0 ||
    info.loadBalancerIPs.length > 0;
  const usesCluster = !info.internalPolicyLocal || (accessible && !info.externalPolicyLocal);
  const usesLocal = info.internalPolicyLocal || (accessible && info.externalPolicyLocal);
  const reachable = ready.filter((e) => usesCluster || (usesLocal && e.isLocal));
  return {
    info,
    allEndpoints: endpoints,
    clusterEndpoints: ready,
    localEndpoints: local,
    allReachableEndpoints: reachable,
    hasAnyEndpoints: ready.length > 0,
  };
}

/** Options for state(). */
export interface StateOptions {
  readonly family?: IPFamily;
  readonly changed?: readonly string[];
  readonly forceFullSync?: boolean;
  readonly totalEndpoints?: number;
}

/** A ProxyState holding the given service ports. */
export function state(ports: readonly ServicePortState[], o: StateOptions = {}): ProxyState {
  const family = o.family ?? "IPv4";
  const services = new Map(ports.map((p) => [servicePortKey(p.info.name), p] as const));
  return {
    family,
    node: {
      name: "node1",
      labels: {},
      ips: [family === "IPv4" ? NODE_IP : NODE_IP6],
      podCIDRs: [],
    },
    services,
    changed: new Set(o.changed ?? services.keys()),
    forceFullSync: o.forceFullSync ?? false,
    totalEndpoints: o.totalEndpoints ?? ports.reduce((n, p) => n + p.allEndpoints.length, 0),
  };
}

/** The key of ns/name:port over TCP, for `changed` sets. */
export function key(
  namespace = "ns1",
  name = "svc1",
  port = "p80",
  protocol: Protocol = "TCP",
): string {
  return servicePortKey({ namespace, name, port, protocol });
}
