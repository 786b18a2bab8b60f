/**
 * Telling the proxy's KUBE- chains from kubelet's in iptables-save and nft output: kubelet's
 * (KUBELET_OWNED_CHAINS) stay on the node after `--cleanup`, KUBE-FIREWALL included, which the
 * proxy also creates but, as upstream, never removes.
 */
import { KUBELET_OWNED_CHAINS } from "../../../lib/netfilter/mod.ts";

/** Whether an output line mentions a KUBE- chain that is not one of kubelet's. */
export function mentionsProxyChain(line: string): boolean {
  return (line.match(/KUBE-[A-Z0-9-]+/g) ?? []).some((c) => !KUBELET_OWNED_CHAINS.has(c));
}
