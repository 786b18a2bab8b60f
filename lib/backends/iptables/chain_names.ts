/**
 * iptables chain names, spelled exactly as upstream kube-proxy spells them so that rules,
 * stale-chain cleanup and other tools (and people) recognise them.
 */
import { nameHash } from "../common/mod.ts";

/** Entry chain for service traffic (nat and filter). */
export const KUBE_SERVICES = "KUBE-SERVICES";
/** filter: REJECT/DROP for external destinations without usable endpoints. */
export const KUBE_EXTERNAL_SERVICES = "KUBE-EXTERNAL-SERVICES";
/** NodePort dispatch (nat) and health-check node port ACCEPTs (filter). */
export const KUBE_NODEPORTS = "KUBE-NODEPORTS";
/** nat POSTROUTING hook that masquerades marked packets. */
export const KUBE_POSTROUTING = "KUBE-POSTROUTING";
/** nat chain that sets the masquerade mark. */
export const KUBE_MARK_MASQ = "KUBE-MARK-MASQ";
/** filter FORWARD hook accepting marked and established service traffic. */
export const KUBE_FORWARD = "KUBE-FORWARD";
/** filter chain dropping load balancer traffic not accepted by a KUBE-FW chain. */
export const KUBE_PROXY_FIREWALL = "KUBE-PROXY-FIREWALL";
/** Empty chain whose disappearance tells us someone flushed the tables. */
export const KUBE_PROXY_CANARY = "KUBE-PROXY-CANARY";
/** Kubelet's anti-martian chain; kube-proxy keeps an identical copy for localhost NodePorts. */
export const KUBE_FIREWALL = "KUBE-FIREWALL";

/** Prefix of a service's Cluster-policy endpoint dispatch chain. */
export const SVC_PREFIX = "KUBE-SVC-";
/** Prefix of a service's Local-policy endpoint dispatch chain. */
export const SVL_PREFIX = "KUBE-SVL-";
/** Prefix of a service's loadBalancerSourceRanges firewall chain. */
export const FW_PREFIX = "KUBE-FW-";
/** Prefix of a service's external-destination chain. */
export const EXT_PREFIX = "KUBE-EXT-";
/** Prefix of a per-endpoint DNAT chain. */
export const SEP_PREFIX = "KUBE-SEP-";

/** The 16-character hash upstream derives chain names from; keeps names under 28 chars. */
export function chainHash(input: string): string {
  return nameHash(input, 16);
}

/** `prefix` + chainHash(input), made as one flat string (it is kept as long as the chain). */
export function hashedChainName(prefix: string, input: string): string {
  return nameHash(input, 16, prefix);
}

/** What a service port's SVC/SVL/EXT/FW hash is taken of: `servicePortName + protocol`. */
export function portProtoHashInput(servicePortName: string, protocol: string): string {
  return servicePortName + protocol.toLowerCase();
}

/** What an endpoint's SEP hash is taken of: `servicePortName + protocol + "ip:port"`. */
export function endpointHashInput(
  servicePortName: string,
  protocol: string,
  endpointAddress: string,
): string {
  return servicePortName + protocol.toLowerCase() + endpointAddress;
}

/** Hash of one service port: `servicePortName + lower-case protocol`. */
export function portProtoHash(servicePortName: string, protocol: string): string {
  return chainHash(portProtoHashInput(servicePortName, protocol));
}

/** KUBE-SVC-<hash>: dispatches to the endpoints used under the Cluster traffic policy. */
export function servicePortPolicyClusterChain(servicePortName: string, protocol: string): string {
  return SVC_PREFIX + portProtoHash(servicePortName, protocol);
}

/** KUBE-SVL-<hash>: dispatches to local endpoints under a Local traffic policy. */
export function servicePortPolicyLocalChain(servicePortName: string, protocol: string): string {
  return SVL_PREFIX + portProtoHash(servicePortName, protocol);
}

/** KUBE-FW-<hash>: filters load balancer traffic by loadBalancerSourceRanges. */
export function serviceFirewallChain(servicePortName: string, protocol: string): string {
  return FW_PREFIX + portProtoHash(servicePortName, protocol);
}

/** KUBE-EXT-<hash>: external traffic entry that short-circuits local sources. */
export function serviceExternalChain(servicePortName: string, protocol: string): string {
  return EXT_PREFIX + portProtoHash(servicePortName, protocol);
}

/** KUBE-SEP-<hash> of `servicePortName + protocol + "ip:port"`: one endpoint's DNAT chain. */
export function servicePortEndpointChain(
  servicePortName: string,
  protocol: string,
  endpointAddress: string,
): string {
  return hashedChainName(SEP_PREFIX, endpointHashInput(servicePortName, protocol, endpointAddress));
}

/** True for per-service chains (SVC/SVL/EXT/FW/SEP) that stale-chain cleanup may delete. */
export function isServiceChainName(chain: string): boolean {
  return [SVC_PREFIX, SVL_PREFIX, SEP_PREFIX, FW_PREFIX, EXT_PREFIX].some((p) =>
    chain.startsWith(p)
  );
}
