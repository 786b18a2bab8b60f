/**
 * iptables mode's jumps from built-in chains into its chains (lib/netfilter inserts them one
 * by one when missing).
 */
import {
  KUBE_EXTERNAL_SERVICES,
  KUBE_FIREWALL,
  KUBE_FORWARD,
  KUBE_NODEPORTS,
  KUBE_POSTROUTING,
  KUBE_PROXY_FIREWALL,
  KUBE_SERVICES,
} from "./chain_names.ts";
import { hasJump, type JumpRule, type SavedTable } from "../../netfilter/mod.ts";

const NEW = ["-m", "conntrack", "--ctstate", "NEW"] as const;

/** Upstream's iptablesJumpChains followed by its copies of kubelet's jumps, in order. */
export const IPTABLES_JUMP_CHAINS: readonly JumpRule[] = [
  j(
    "filter",
    KUBE_EXTERNAL_SERVICES,
    "INPUT",
    "kubernetes externally-visible service portals",
    NEW,
  ),
  j(
    "filter",
    KUBE_EXTERNAL_SERVICES,
    "FORWARD",
    "kubernetes externally-visible service portals",
    NEW,
  ),
  j("filter", KUBE_NODEPORTS, "INPUT", "kubernetes health check service ports", []),
  j("filter", KUBE_SERVICES, "FORWARD", "kubernetes service portals", NEW),
  j("filter", KUBE_SERVICES, "OUTPUT", "kubernetes service portals", NEW),
  j("filter", KUBE_FORWARD, "FORWARD", "kubernetes forwarding rules", []),
  j("filter", KUBE_PROXY_FIREWALL, "INPUT", "kubernetes load balancer firewall", NEW),
  j("filter", KUBE_PROXY_FIREWALL, "OUTPUT", "kubernetes load balancer firewall", NEW),
  j("filter", KUBE_PROXY_FIREWALL, "FORWARD", "kubernetes load balancer firewall", NEW),
  j("nat", KUBE_SERVICES, "OUTPUT", "kubernetes service portals", []),
  j("nat", KUBE_SERVICES, "PREROUTING", "kubernetes service portals", []),
  j("nat", KUBE_POSTROUTING, "POSTROUTING", "kubernetes postrouting rules", []),
  j("filter", KUBE_FIREWALL, "INPUT", "", []),
  j("filter", KUBE_FIREWALL, "OUTPUT", "", []),
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

/** The jumps of `tableName` that `table` lacks (all of them when the table is unknown). */
export function missingJumps(
  tableName: "filter" | "nat",
  table: SavedTable | undefined,
): JumpRule[] {
  return IPTABLES_JUMP_CHAINS.filter((r) => r.table === tableName && !hasJump(table, r));
}
