/**
 * Telling the proxy's KUBE- chains from kubelet's in iptables-save and nft output: kubelet's
 * stay on the node after `--cleanup`, KUBE-FIREWALL included, which the proxy also creates but,
 * as upstream, never removes.
 */

const KUBELET_CHAIN = /KUBE-(IPTABLES-HINT|KUBELET-CANARY|FIREWALL)\b/;

/** Whether an output line mentions a KUBE- chain and none of kubelet's. */
export function mentionsProxyChain(line: string): boolean {
  return line.includes("KUBE-") && !KUBELET_CHAIN.test(line);
}
