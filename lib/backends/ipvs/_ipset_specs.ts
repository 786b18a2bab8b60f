/**
 * The 17 ipsets of IPVS mode as upstream declares them (`ipsetInfo`): type, iptables comment,
 * the `create` line, and the member spelling ipset itself prints, so desired members compare
 * equal to what `ipset save` reads back.
 */
import { canonicalIP, cidrString, parseCIDR } from "../../net/mod.ts";
import type { IPFamily, Protocol } from "../../proxy/mod.ts";
import { ipv6IpsetName } from "./_ipset_names.ts";

/** The ipset types IPVS mode uses. */
export type IpsetType =
  | "hash:ip"
  | "hash:ip,port"
  | "hash:ip,port,ip"
  | "hash:ip,port,net"
  | "bitmap:port";

/** One set: its IPv4 name, type and the comment its iptables rules carry. */
export interface IpsetSpec {
  readonly base: string;
  readonly type: IpsetType;
  readonly comment: string;
}

function spec(base: string, type: IpsetType, comment: string): IpsetSpec {
  return { base, type, comment };
}

/** IPv4 names of the sets, as constants so call sites cannot misspell them. */
export const IPSET = {
  loopBack: "KUBE-LOOP-BACK",
  clusterIP: "KUBE-CLUSTER-IP",
  externalIP: "KUBE-EXTERNAL-IP",
  externalIPLocal: "KUBE-EXTERNAL-IP-LOCAL",
  loadBalancer: "KUBE-LOAD-BALANCER",
  loadBalancerFW: "KUBE-LOAD-BALANCER-FW",
  loadBalancerLocal: "KUBE-LOAD-BALANCER-LOCAL",
  loadBalancerSourceIP: "KUBE-LOAD-BALANCER-SOURCE-IP",
  loadBalancerSourceCIDR: "KUBE-LOAD-BALANCER-SOURCE-CIDR",
  nodePortTCP: "KUBE-NODE-PORT-TCP",
  nodePortLocalTCP: "KUBE-NODE-PORT-LOCAL-TCP",
  nodePortUDP: "KUBE-NODE-PORT-UDP",
  nodePortLocalUDP: "KUBE-NODE-PORT-LOCAL-UDP",
  nodePortSCTP: "KUBE-NODE-PORT-SCTP-HASH",
  nodePortLocalSCTP: "KUBE-NODE-PORT-LOCAL-SCTP-HASH",
  healthCheckNodePort: "KUBE-HEALTH-CHECK-NODE-PORT",
  ipvsIPs: "KUBE-IPVS-IPS",
} as const;

/** Every set in upstream's `ipsetInfo` order (creation order). */
export const IPSET_SPECS: readonly IpsetSpec[] = [
  spec(
    IPSET.loopBack,
    "hash:ip,port,ip",
    "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose",
  ),
  spec(
    IPSET.clusterIP,
    "hash:ip,port",
    "Kubernetes service cluster ip + port for masquerade purpose",
  ),
  spec(
    IPSET.externalIP,
    "hash:ip,port",
    "Kubernetes service external ip + port for masquerade and filter purpose",
  ),
  spec(
    IPSET.externalIPLocal,
    "hash:ip,port",
    "Kubernetes service external ip + port with externalTrafficPolicy=local",
  ),
  spec(IPSET.loadBalancer, "hash:ip,port", "Kubernetes service lb portal"),
  spec(
    IPSET.loadBalancerFW,
    "hash:ip,port",
    "Kubernetes service load balancer ip + port for load balancer with sourceRange",
  ),
  spec(
    IPSET.loadBalancerLocal,
    "hash:ip,port",
    "Kubernetes service load balancer ip + port with externalTrafficPolicy=local",
  ),
  spec(
    IPSET.loadBalancerSourceIP,
    "hash:ip,port,ip",
    "Kubernetes service load balancer ip + port + source IP for packet filter purpose",
  ),
  spec(
    IPSET.loadBalancerSourceCIDR,
    "hash:ip,port,net",
    "Kubernetes service load balancer ip + port + source cidr for packet filter purpose",
  ),
  spec(IPSET.nodePortTCP, "bitmap:port", "Kubernetes nodeport TCP port for masquerade purpose"),
  spec(
    IPSET.nodePortLocalTCP,
    "bitmap:port",
    "Kubernetes nodeport TCP port with externalTrafficPolicy=local",
  ),
  spec(IPSET.nodePortUDP, "bitmap:port", "Kubernetes nodeport UDP port for masquerade purpose"),
  spec(
    IPSET.nodePortLocalUDP,
    "bitmap:port",
    "Kubernetes nodeport UDP port with externalTrafficPolicy=local",
  ),
  spec(
    IPSET.nodePortSCTP,
    "hash:ip,port",
    "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
  ),
  spec(
    IPSET.nodePortLocalSCTP,
    "hash:ip,port",
    "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'",
  ),
  spec(IPSET.healthCheckNodePort, "bitmap:port", "Kubernetes health check node port"),
  spec(IPSET.ipvsIPs, "hash:ip", "Addresses on the ipvs interface"),
];

const SPEC_BY_BASE = new Map(IPSET_SPECS.map((s) => [s.base, s] as const));

/** The spec of a set by its IPv4 name; throws for a name that is not one of ours. */
export function ipsetSpec(base: string): IpsetSpec {
  const s = SPEC_BY_BASE.get(base);
  if (s === undefined) throw new RangeError(`Unknown ipset "${base}": expected a KUBE- set`);
  return s;
}

/** The kernel name of a set for one family (`KUBE-6-…` for IPv6). */
export function ipsetName(base: string, family: IPFamily): string {
  return family === "IPv6" ? ipv6IpsetName(base) : base;
}

/** The `create … -exist` line of a set, with upstream's options and no comment support. */
export function ipsetCreateLine(s: IpsetSpec, family: IPFamily): string {
  const name = ipsetName(s.base, family);
  if (s.type === "bitmap:port") return `create ${name} ${s.type} range 0-65535 -exist`;
  const fam = family === "IPv6" ? "inet6" : "inet";
  return `create ${name} ${s.type} family ${fam} hashsize 1024 maxelem 65536 -exist`;
}

/** `IP,proto:port` (hash:ip,port), as ipset prints it. */
export function ipPortEntry(ip: string, protocol: Protocol, port: number): string {
  return `${ip},${protocol.toLowerCase()}:${port}`;
}

/** `IP,proto:port,IP2` (hash:ip,port,ip). */
export function ipPortIpEntry(ip: string, protocol: Protocol, port: number, ip2: string): string {
  return `${ipPortEntry(ip, protocol, port)},${ip2}`;
}

/** `IP,proto:port,CIDR` (hash:ip,port,net); host-length prefixes are printed bare, as ipset does. */
export function ipPortNetEntry(ip: string, protocol: Protocol, port: number, cidr: string): string {
  return `${ipPortEntry(ip, protocol, port)},${canonicalNet(cidr)}`;
}

/** A CIDR as ipset prints a net member: masked, and without `/32` or `/128`. */
export function canonicalNet(cidr: string): string {
  const c = parseCIDR(cidr);
  if (c === null) return cidr;
  const full = c.family === "IPv4" ? 32 : 128;
  const text = cidrString(c);
  return c.prefix === full ? text.slice(0, text.indexOf("/")) : text;
}

/**
 * A member read back from the kernel in the spelling desired members use: IPs canonical,
 * protocol lower case, nets without host prefix. Unparseable members are returned as is, so
 * they never equal a desired member and get deleted.
 */
export function canonicalMember(type: IpsetType, member: string): string {
  const parts = member.trim().split(",");
  const ip = (s: string | undefined) => (s === undefined ? null : canonicalIP(s));
  switch (type) {
    case "bitmap:port":
      return /^\d+$/.test(member.trim()) ? String(Number(member.trim())) : member;
    case "hash:ip":
      return ip(parts[0]) ?? member;
    default: {
      const a = ip(parts[0]);
      const pp = /^([a-z]+):(\d+)$/i.exec(parts[1] ?? "");
      if (a === null || pp === null || pp[1] === undefined || pp[2] === undefined) return member;
      const head = `${a},${pp[1].toLowerCase()}:${Number(pp[2])}`;
      if (type === "hash:ip,port") return parts.length === 2 ? head : member;
      if (parts.length !== 3) return member;
      const third = parts[2] ?? "";
      if (type === "hash:ip,port,ip") return `${head},${ip(third) ?? third}`;
      return `${head},${third.includes("/") ? canonicalNet(third) : (ip(third) ?? third)}`;
    }
  }
}
