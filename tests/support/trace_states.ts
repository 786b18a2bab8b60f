/**
 * Seeded generators for the differential trace tests: ProxyStates mixing every feature the
 * renderers branch on, and packets aimed at them (and beside them).
 * IP plan: pods 10.0.0.0/8 (fd00:10::/64), service IPs 172.30.0.0/16 (fd00:30::/108), node
 * 192.168.0.2 (fd00:20::2), external client 203.0.113.2 (fd00:99::2), externalIPs
 * 198.51.100.0/24 (fd00:40::/64), LB IPs 203.0.114.0/24 (fd00:50::/64).
 */
import { joinHostPort } from "../../lib/net/mod.ts";
import {
  categorizeEndpoints,
  type Endpoint,
  type IPFamily,
  type Protocol,
  type ProxyState,
  type ServicePort,
  servicePortKey,
  type ServicePortState,
  TOPOLOGY_ZONE_LABEL,
} from "../../lib/proxy/mod.ts";
import type { TracePacket, TraceProtocol, TraceSource } from "../../lib/trace/mod.ts";

/** A small deterministic PRNG (mulberry32), so a seed names a whole run. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The addresses of the fixture node and its neighbours, per family. */
export interface FamilyPlan {
  readonly nodeIP: string;
  readonly loopback: string;
  readonly podCIDR: string;
  /** The ServiceCIDR all ClusterIPs come from (nftables drops its unallocated addresses). */
  readonly serviceCIDR: string;
  /** This node's share of podCIDR (for --detect-local-mode NodeCIDR); holds localPod. */
  readonly nodePodCIDR: string;
  readonly localPod: string;
  readonly external: string;
  /** An outside client in ranges[1]. */
  readonly otherClient: string;
  readonly clusterIP: (i: number) => string;
  readonly externalIP: (i: number) => string;
  readonly lbIP: (i: number) => string;
  readonly endpointIP: (i: number, k: number) => string;
  /** A source-range CIDR that holds the external client, one that does not, one with the node. */
  readonly ranges: readonly [string, string, string];
}

/** The IP plan of one family. */
export function familyPlan(family: IPFamily): FamilyPlan {
  if (family === "IPv4") {
    return {
      nodeIP: "192.168.0.2",
      loopback: "127.0.0.1",
      podCIDR: "10.0.0.0/8",
      serviceCIDR: "172.30.0.0/16",
      nodePodCIDR: "10.0.0.0/16",
      localPod: "10.0.9.9",
      external: "203.0.113.2",
      otherClient: "198.18.0.7",
      clusterIP: (i) => `172.30.${i >> 8}.${(i & 255) + 1}`,
      externalIP: (i) => `198.51.100.${(i % 250) + 1}`,
      lbIP: (i) => `203.0.114.${(i % 250) + 1}`,
      endpointIP: (i, k) => `10.${(i >> 8) + 1}.${i & 255}.${k + 1}`,
      ranges: ["203.0.113.0/24", "198.18.0.0/15", "192.168.0.0/24"],
    };
  }
  return {
    nodeIP: "fd00:20::2",
    loopback: "::1",
    podCIDR: "fd00:10::/64",
    serviceCIDR: "fd00:30::/108",
    nodePodCIDR: "fd00:10::9:0/112",
    localPod: "fd00:10::9:9",
    external: "fd00:99::2",
    otherClient: "fd00:98::7",
    clusterIP: (i) => `fd00:30::${(i + 1).toString(16)}`,
    externalIP: (i) => `fd00:40::${((i % 250) + 1).toString(16)}`,
    lbIP: (i) => `fd00:50::${((i % 250) + 1).toString(16)}`,
    endpointIP: (i, k) => `fd00:10::${(i + 1).toString(16)}:${k + 1}`,
    ranges: ["fd00:99::/64", "fd00:98::/64", "fd00:20::/64"],
  };
}

/** The node the generated states run on. */
export const TRACE_NODE = "node1";
const ZONE = "zone-a";

function endpointsFor(rand: () => number, i: number, plan: FamilyPlan): Endpoint[] {
  const n = Math.floor(rand() * 5);
  const hinted = rand() < 0.15;
  const out: Endpoint[] = [];
  for (let k = 0; k < n; k++) {
    const ip = plan.endpointIP(i, k);
    const port = rand() < 0.5 ? 8080 : 80 + k;
    const r = rand();
    const ready = r < 0.75;
    const terminating = !ready && r < 0.9;
    const isLocal = rand() < 0.4;
    out.push({
      ip,
      port,
      address: joinHostPort(ip, port),
      ready,
      serving: ready || (terminating && rand() < 0.7),
      terminating,
      isLocal,
      nodeName: isLocal ? TRACE_NODE : "node2",
      zone: rand() < 0.5 ? ZONE : "zone-b",
      zoneHints: hinted ? [rand() < 0.5 ? ZONE : "zone-b"] : [],
      nodeHints: hinted && rand() < 0.3 ? [isLocal ? TRACE_NODE : "node2"] : [],
    });
  }
  return out.sort((a, b) => a.address < b.address ? -1 : 1);
}

function servicePortFor(rand: () => number, i: number, plan: FamilyPlan): ServicePort {
  const protocol: Protocol = (["TCP", "TCP", "UDP", "SCTP"] as const)[Math.floor(rand() * 4)]!;
  const kind = rand();
  const nodePort = kind < 0.35 ? 0 : 30000 + i;
  const lb = kind > 0.7;
  const externalIPs = rand() < 0.2 ? [plan.externalIP(i)] : [];
  const accessible = nodePort !== 0 || lb || externalIPs.length > 0;
  const r = rand();
  const ranges = lb && r < 0.5
    ? (r < 0.15 ? [plan.ranges[0], plan.ranges[2]] : r < 0.3 ? [plan.ranges[1]] : [plan.ranges[0]])
    : [];
  const externalPolicyLocal = accessible && rand() < 0.4;
  return {
    name: {
      namespace: i % 3 === 0 ? "default" : "ns1",
      name: `svc${i}`,
      port: ["http", "", "p80"][i % 3]!,
      protocol,
    },
    clusterIP: plan.clusterIP(i),
    port: 80 + (i % 3),
    protocol,
    nodePort,
    externalIPs,
    loadBalancerIPs: lb ? [plan.lbIP(i)] : [],
    loadBalancerSourceRanges: ranges,
    stickyMaxAgeSeconds: rand() < 0.2 ? 10800 : 0,
    externalPolicyLocal,
    internalPolicyLocal: rand() < 0.2,
    healthCheckNodePort: externalPolicyLocal && (nodePort !== 0 || lb) ? 32000 + i : 0,
  };
}

/** Builds a ProxyState from service ports and their raw endpoints, selecting as the brain does. */
export function buildState(
  family: IPFamily,
  ports: readonly { info: ServicePort; endpoints: readonly Endpoint[] }[],
): ProxyState {
  const plan = familyPlan(family);
  const labels = { [TOPOLOGY_ZONE_LABEL]: ZONE };
  const services = new Map<string, ServicePortState>();
  let total = 0;
  for (const { info, endpoints } of ports) {
    const selected = categorizeEndpoints(endpoints, info, TRACE_NODE, labels);
    services.set(servicePortKey(info.name), { info, allEndpoints: endpoints, ...selected });
    total += endpoints.length;
  }
  return {
    family,
    node: { name: TRACE_NODE, labels, ips: [plan.nodeIP], podCIDRs: [plan.nodePodCIDR] },
    services,
    changed: new Set(services.keys()),
    forceFullSync: true,
    totalEndpoints: total,
    serviceCIDRs: [plan.serviceCIDR],
  };
}

/** `count` generated service ports of one family (a second port on some ClusterIPs). */
export function generateState(seed: number, count: number, family: IPFamily): ProxyState {
  const rand = prng(seed);
  const plan = familyPlan(family);
  const ports: { info: ServicePort; endpoints: Endpoint[] }[] = [];
  for (let i = 0; i < count; i++) {
    const info = servicePortFor(rand, i, plan);
    ports.push({ info, endpoints: endpointsFor(rand, i, plan) });
    if (rand() < 0.1) {
      // A second port of the same service: same ClusterIP, other port and name.
      const second: ServicePort = {
        ...info,
        name: { ...info.name, port: "extra" },
        port: info.port + 100,
        nodePort: info.nodePort === 0 ? 0 : info.nodePort + 1000,
      };
      ports.push({ info: second, endpoints: endpointsFor(rand, i, plan) });
    }
  }
  return buildState(family, ports);
}

/** Packets aimed at every address of every service port, from every source, plus misses. */
export function generatePackets(state: ProxyState): TracePacket[] {
  const plan = familyPlan(state.family);
  const out: TracePacket[] = [];
  const add = (
    source: TraceSource,
    from: string,
    protocol: TraceProtocol,
    to: string,
    port: number,
  ) => out.push({ family: state.family, from, protocol, to, port, source });
  const sources: [TraceSource, string][] = [
    ["pod", plan.localPod],
    ["node", plan.nodeIP],
    ["external", plan.external],
  ];
  for (const sps of state.services.values()) {
    const info = sps.info;
    const proto = info.protocol.toLowerCase() as TraceProtocol;
    const vips = [info.clusterIP, ...info.externalIPs, ...info.loadBalancerIPs];
    for (const [source, from] of sources) {
      for (const vip of vips) add(source, from, proto, vip, info.port);
      if (info.nodePort !== 0) add(source, from, proto, plan.nodeIP, info.nodePort);
    }
    if (info.nodePort !== 0) add("node", plan.loopback, proto, plan.loopback, info.nodePort);
    if (info.healthCheckNodePort !== 0) {
      add("external", plan.external, "tcp", plan.nodeIP, info.healthCheckNodePort);
    }
    for (const lb of info.loadBalancerIPs) {
      // A client inside the second range, and the node calling its own LB IP.
      add("external", plan.otherClient, proto, lb, info.port);
      add("node", lb, proto, lb, info.port);
    }
    const hairpin = sps.allReachableEndpoints[0];
    if (hairpin !== undefined) add("pod", hairpin.ip, proto, info.clusterIP, info.port);
    // Beside the service: an unused port of its ClusterIP, and the other protocol.
    add("pod", plan.localPod, proto, info.clusterIP, info.port + 7);
    add("pod", plan.localPod, proto === "udp" ? "tcp" : "udp", info.clusterIP, info.port);
  }
  add("pod", plan.localPod, "tcp", plan.clusterIP(4000), 80);
  return out;
}
