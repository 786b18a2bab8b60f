/**
 * The iptables chains of kube-proxy's two iptables-writing modes, and whose they are: which
 * chains `--cleanup` and the leftovers passes may delete, which kubelet owns, and which chains
 * and jumps iptables mode writes. IPVS mode's leftovers pass needs iptables mode's as much as
 * iptables mode does, so they are kept here, below both. Pure.
 */
import type { JumpRule } from "./_jump_rule.ts";

/**
 * Chains kubelet makes, which no cleanup removes even where kube-proxy writes the same chain:
 * its flavour markers (other tools detect the iptables flavour by them) and KUBE-FIREWALL, the
 * localnet guard iptables mode keeps a copy of for localhost NodePorts.
 */
export const KUBELET_OWNED_CHAINS: ReadonlySet<string> = new Set([
  "KUBE-IPTABLES-HINT",
  "KUBE-KUBELET-CANARY",
  "KUBE-FIREWALL",
]);

/**
 * The fixed chain names kube-proxy's iptables and IPVS modes write (ours and upstream's), in
 * any table: iptables mode's top-level chains and canary, then IPVS mode's own. Cleanup removes
 * these and the prefixed chains below, and nothing else: other programs' `KUBE-` chains (such
 * as kube-router's) stay.
 */
export const KUBE_PROXY_CHAINS: ReadonlySet<string> = new Set([
  "KUBE-SERVICES",
  "KUBE-EXTERNAL-SERVICES",
  "KUBE-NODEPORTS",
  "KUBE-POSTROUTING",
  "KUBE-MARK-MASQ",
  "KUBE-FORWARD",
  "KUBE-PROXY-FIREWALL",
  "KUBE-PROXY-CANARY",
  "KUBE-NODE-PORT",
  "KUBE-LOAD-BALANCER",
  "KUBE-SOURCE-RANGES-FIREWALL",
  "KUBE-IPVS-FILTER",
  "KUBE-IPVS-OUT-FILTER",
]);

/**
 * Prefixes of the per-service and per-endpoint chains (KUBE-SVC-, KUBE-SVL-, KUBE-EXT-,
 * KUBE-FW-, KUBE-SEP-) and of KUBE-XLB-, which older upstream releases wrote in their place.
 */
export const KUBE_PROXY_CHAIN_PREFIXES: readonly string[] = [
  "KUBE-SVC-",
  "KUBE-SVL-",
  "KUBE-EXT-",
  "KUBE-FW-",
  "KUBE-SEP-",
  "KUBE-XLB-",
];

/** True for a chain `--cleanup` and the leftovers pass delete: one kube-proxy writes. */
export function isCleanupChain(chain: string): boolean {
  if (KUBELET_OWNED_CHAINS.has(chain)) return false;
  return KUBE_PROXY_CHAINS.has(chain) || KUBE_PROXY_CHAIN_PREFIXES.some((p) => chain.startsWith(p));
}

/** Iptables mode's own chains, which its removal of IPVS mode's leftovers keeps. */
export const IPTABLES_MODE_CHAINS: Readonly<Record<string, readonly string[]>> = {
  nat: [
    "KUBE-SERVICES",
    "KUBE-NODEPORTS",
    "KUBE-POSTROUTING",
    "KUBE-MARK-MASQ",
    "KUBE-PROXY-CANARY",
  ],
  filter: [
    "KUBE-SERVICES",
    "KUBE-EXTERNAL-SERVICES",
    "KUBE-FORWARD",
    "KUBE-NODEPORTS",
    "KUBE-PROXY-FIREWALL",
    "KUBE-PROXY-CANARY",
  ],
  mangle: ["KUBE-PROXY-CANARY"],
};

const NEW = ["-m", "conntrack", "--ctstate", "NEW"] as const;

/**
 * iptables mode's jumps from built-in chains into its chains: upstream's iptablesJumpChains
 * followed by its copies of kubelet's jumps, in order.
 */
export const IPTABLES_JUMP_CHAINS: readonly JumpRule[] = [
  j(
    "filter",
    "KUBE-EXTERNAL-SERVICES",
    "INPUT",
    "kubernetes externally-visible service portals",
    NEW,
  ),
  j(
    "filter",
    "KUBE-EXTERNAL-SERVICES",
    "FORWARD",
    "kubernetes externally-visible service portals",
    NEW,
  ),
  j("filter", "KUBE-NODEPORTS", "INPUT", "kubernetes health check service ports", []),
  j("filter", "KUBE-SERVICES", "FORWARD", "kubernetes service portals", NEW),
  j("filter", "KUBE-SERVICES", "OUTPUT", "kubernetes service portals", NEW),
  j("filter", "KUBE-FORWARD", "FORWARD", "kubernetes forwarding rules", []),
  j("filter", "KUBE-PROXY-FIREWALL", "INPUT", "kubernetes load balancer firewall", NEW),
  j("filter", "KUBE-PROXY-FIREWALL", "OUTPUT", "kubernetes load balancer firewall", NEW),
  j("filter", "KUBE-PROXY-FIREWALL", "FORWARD", "kubernetes load balancer firewall", NEW),
  j("nat", "KUBE-SERVICES", "OUTPUT", "kubernetes service portals", []),
  j("nat", "KUBE-SERVICES", "PREROUTING", "kubernetes service portals", []),
  j("nat", "KUBE-POSTROUTING", "POSTROUTING", "kubernetes postrouting rules", []),
  j("filter", "KUBE-FIREWALL", "INPUT", "", []),
  j("filter", "KUBE-FIREWALL", "OUTPUT", "", []),
];

function j(
  table: "filter" | "nat",
  dstChain: string,
  srcChain: string,
  comment: string,
  extraArgs: readonly string[],
): JumpRule {
  return { table, srcChain, dstChain, comment, extraArgs };
}
