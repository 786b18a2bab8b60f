/**
 * Hand-built states for the nftables and IPVS tracer tests (and their read tests), one service port per feature.
 * IP plan: pods 10.0.0.0/8 (local pods 10.0.2.0/24), service IPs 172.30.0.0/16, node
 * 192.168.0.2, external client 203.0.113.2, load balancer 5.6.7.8, external IP 1.2.3.4.
 */
import type { ProxyState } from "../../lib/proxy/mod.ts";
import type { TracePacket, TraceProtocol, TraceSource } from "../../lib/trace/decision.ts";
import { ep, NODE_IP, port, state, svc } from "../backends/ipvs/fixtures.ts";

export { NODE_IP };

/** A packet of the IPv4 plan. */
export function packet(
  source: TraceSource,
  from: string,
  to: string,
  dport: number,
  protocol: TraceProtocol = "tcp",
): TracePacket {
  return { family: "IPv4", from, to, port: dport, protocol, source };
}

/** The node's local addresses. */
export const NODE = { localAddresses: [NODE_IP, "127.0.0.1"] };

/**
 * - ns1/web:http  172.30.0.10:80/TCP, NodePort 30080, two endpoints (one local)
 * - ns1/lb:http   172.30.0.11:80/TCP, LB 5.6.7.8 from 203.0.113.0/24, NodePort 30081
 * - ns1/dns:dns   172.30.0.12:53/UDP, externalIP 1.2.3.4, ETP Local, NodePort 30082
 * - ns1/far:http  172.30.0.13:80/TCP, externalIP 1.2.3.5, ETP Local, no local endpoint
 * - ns1/empty:http 172.30.0.14:80/TCP, NodePort 30084, no endpoints
 * - ns1/sticky:http 172.30.0.15:80/TCP, ClientIP affinity 600 s, two endpoints
 * - ns1/itp:http  172.30.0.16:80/TCP, ITP Local, no local endpoint
 */
export function handState(): ProxyState {
  const http = { portName: "http" };
  return state([
    port(svc({ ...http, name: "web", clusterIP: "172.30.0.10", nodePort: 30080 }), [
      ep("10.0.1.1", 8080),
      ep("10.0.2.2", 8080, { isLocal: true }),
    ]),
    port(
      svc({
        ...http,
        name: "lb",
        clusterIP: "172.30.0.11",
        nodePort: 30081,
        loadBalancerIPs: ["5.6.7.8"],
        loadBalancerSourceRanges: ["203.0.113.0/24"],
      }),
      [ep("10.0.1.3", 8080)],
    ),
    port(
      svc({
        portName: "dns",
        name: "dns",
        protocol: "UDP",
        clusterIP: "172.30.0.12",
        port: 53,
        nodePort: 30082,
        externalIPs: ["1.2.3.4"],
        externalPolicyLocal: true,
      }),
      [ep("10.0.1.4", 5353), ep("10.0.2.4", 5353, { isLocal: true })],
    ),
    port(
      svc({
        ...http,
        name: "far",
        clusterIP: "172.30.0.13",
        externalIPs: ["1.2.3.5"],
        externalPolicyLocal: true,
      }),
      [ep("10.0.1.5", 8080)],
    ),
    port(svc({ ...http, name: "empty", clusterIP: "172.30.0.14", nodePort: 30084 }), []),
    port(svc({ ...http, name: "sticky", clusterIP: "172.30.0.15", stickyMaxAgeSeconds: 600 }), [
      ep("10.0.1.6", 8080),
      ep("10.0.1.7", 8080),
    ]),
    port(svc({ ...http, name: "itp", clusterIP: "172.30.0.16", internalPolicyLocal: true }), [
      ep("10.0.1.8", 8080),
    ]),
  ]);
}
