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
  usesClusterEndpoints,
  usesLocalEndpoints,
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
  const usesCluster = usesClusterEndpoints(info);
  const usesLocal = usesLocalEndpoints(info);
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
  /** The family's ServiceCIDRs (default none). */
  readonly serviceCIDRs?: readonly string[];
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
    serviceCIDRs: o.serviceCIDRs ?? [],
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

/**
 * `n` deterministic service ports mixing every feature the renderer branches on: protocols,
 * NodePorts, externalIPs, load balancers with and without source ranges, session affinity,
 * traffic policies, local, non-ready and missing endpoints. `generation` moves the endpoints.
 */
export function variedServicePorts(
  n: number,
  family: IPFamily = "IPv4",
  generation = 0,
): ServicePortState[] {
  const v6 = family === "IPv6";
  const out: ServicePortState[] = [];
  for (let i = 0; i < n; i++) {
    const bit = (k: number) => ((i * 7 + generation) >> k) % 2 === 1;
    const nodePort = bit(0) || i % 5 === 0;
    const lb = i % 4 === 1;
    const external = i % 6 === 2;
    const accessible = nodePort || lb || external;
    const info = svc({
      name: `s${i}`,
      namespace: i % 2 === 0 ? "ns1" : "ns2",
      portName: ["p80", "", "http"][i % 3]!,
      protocol: (["TCP", "UDP", "SCTP"] as const)[i % 3]!,
      clusterIP: v6 ? `fd00:30::${(i + 1).toString(16)}` : `172.30.${i >> 8}.${(i % 250) + 1}`,
      port: 80 + (i % 5),
      nodePort: nodePort || lb ? 30000 + i : 0,
      externalIPs: external ? [v6 ? `fd00:40::${i + 1}` : `198.51.100.${(i % 250) + 1}`] : [],
      loadBalancerIPs: lb ? [v6 ? `fd00:50::${i + 1}` : `203.0.114.${(i % 250) + 1}`] : [],
      loadBalancerSourceRanges: lb && bit(1)
        ? (v6 ? ["fd00:20::/64"] : ["192.168.0.0/24", "203.0.113.0/24"])
        : [],
      stickyMaxAgeSeconds: i % 5 === 3 ? 10800 : 0,
      externalPolicyLocal: accessible && bit(2),
      internalPolicyLocal: i % 7 === 4,
      healthCheckNodePort: accessible && bit(2) ? 32000 + i : 0,
    });
    const endpoints: Endpoint[] = [];
    for (let k = 0; k < i % 4; k++) {
      const ip = v6
        ? `fd00:10::${i.toString(16)}:${k}:${generation}`
        : `10.${i % 200}.${k}.${generation + 1}`;
      endpoints.push(ep(ip, 8080 + k, { isLocal: (i + k) % 3 === 0, ready: (i + k) % 9 !== 8 }));
    }
    out.push(sps(info, endpoints));
  }
  return out;
}
