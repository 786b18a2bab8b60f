/**
 * Questions about one ServicePort that both endpoint selection and the backends ask, answered
 * exactly as upstream's BaseServicePortInfo answers them.
 */
import type { ServicePort } from "./types.ts";

/** Reachable other than through the ClusterIP (NodePort, externalIPs or a VIP load balancer). */
export function externallyAccessible(info: ServicePort): boolean {
  return info.nodePort !== 0 || info.loadBalancerIPs.length > 0 || info.externalIPs.length > 0;
}

/**
 * Some traffic follows the Cluster policy: internal traffic with internalTrafficPolicy Cluster,
 * or any external traffic (ETP Local still short-circuits pod and node traffic to all endpoints).
 */
export function usesClusterEndpoints(info: ServicePort): boolean {
  return !info.internalPolicyLocal || externallyAccessible(info);
}

/** Some traffic follows a Local policy (ITP Local, or ETP Local on an external entry point). */
export function usesLocalEndpoints(info: ServicePort): boolean {
  return info.internalPolicyLocal || (info.externalPolicyLocal && externallyAccessible(info));
}
