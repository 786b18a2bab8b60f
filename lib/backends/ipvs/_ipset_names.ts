/** The names of the ipsets IPVS mode creates, as upstream spells them for each IP family. */

/** ipset names are at most 31 characters; longer IPv6 names are cut, as upstream does. */
export const IPSET_NAME_MAX = 31;

/** The IPv4 names of the 17 ipsets upstream's IPVS proxier creates (its `ipsetInfo`). */
export const KUBE_IPSET_BASE_NAMES: readonly string[] = [
  "KUBE-LOOP-BACK",
  "KUBE-CLUSTER-IP",
  "KUBE-EXTERNAL-IP",
  "KUBE-EXTERNAL-IP-LOCAL",
  "KUBE-LOAD-BALANCER",
  "KUBE-LOAD-BALANCER-FW",
  "KUBE-LOAD-BALANCER-LOCAL",
  "KUBE-LOAD-BALANCER-SOURCE-IP",
  "KUBE-LOAD-BALANCER-SOURCE-CIDR",
  "KUBE-NODE-PORT-TCP",
  "KUBE-NODE-PORT-LOCAL-TCP",
  "KUBE-NODE-PORT-UDP",
  "KUBE-NODE-PORT-LOCAL-UDP",
  "KUBE-NODE-PORT-SCTP-HASH",
  "KUBE-NODE-PORT-LOCAL-SCTP-HASH",
  "KUBE-HEALTH-CHECK-NODE-PORT",
  "KUBE-IPVS-IPS",
];

/** The IPv6 spelling of a set name: `KUBE-` becomes `KUBE-6-`, cut to 31 characters. */
export function ipv6IpsetName(name: string): string {
  if (!name.startsWith("KUBE-")) return name;
  return ("KUBE-6-" + name.slice("KUBE-".length)).slice(0, IPSET_NAME_MAX);
}

/** Every ipset name IPVS mode may have created, both families; `--cleanup` destroys these. */
export const KUBE_IPSET_NAMES: ReadonlySet<string> = new Set([
  ...KUBE_IPSET_BASE_NAMES,
  ...KUBE_IPSET_BASE_NAMES.map(ipv6IpsetName),
]);
