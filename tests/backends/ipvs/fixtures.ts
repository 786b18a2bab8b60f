/**
 * ProxyState builders for the IPVS tests, with endpoints categorised by the real brain
 * (categorizeEndpoints), so traffic-policy fallbacks are those the proxy would compute.
 * IP plan: pods 10.0.0.0/8, service IPs 172.30.0.0/16, node 192.168.0.2, external client
 * 203.0.113.2; IPv6 services fd00:30::/108, pods fd00:10::/64, node fd00:20::2.
 */
import {
  categorizeEndpoints,
  type Endpoint,
  type ServicePort,
  type ServicePortState,
} from "../../../lib/proxy/mod.ts";
export { ep, key, NODE_IP, NODE_IP6, state, svc } from "../iptables/state_fixtures.ts";

/** A service port with its endpoints categorised for node1, as the proxy does. */
export function port(info: ServicePort, endpoints: readonly Endpoint[] = []): ServicePortState {
  return { info, allEndpoints: endpoints, ...categorizeEndpoints(endpoints, info, "node1", {}) };
}
