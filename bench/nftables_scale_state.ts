/**
 * ProxyStates for the nftables scale measurements: N ClusterIP services × M endpoints in the
 * test IP plan (service IPs 172.30.0.0/16 and beyond, pods 10.0.0.0/8). Every tenth service
 * also has a NodePort so the NodePort maps are exercised at scale.
 */
import type { ProxyState, ServicePortState } from "../lib/proxy/mod.ts";
import { ep, key, sps, state, svc } from "../tests/backends/iptables/state_fixtures.ts";

/** The key of the service whose first endpoint the one-endpoint-change case replaces. */
export const SCALE_FIRST_KEY = key("ns1", "svc0");

/** N service ports of M endpoints each; svc0's first endpoint is `firstEndpointIP`. */
export function scaleServicePorts(
  n: number,
  m: number,
  firstEndpointIP = "10.255.255.1",
): ServicePortState[] {
  const out: ServicePortState[] = [];
  for (let i = 0; i < n; i++) {
    const clusterIP = `172.${30 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
    const eps = [];
    for (let j = 0; j < m; j++) {
      const e = i * m + j;
      const ip = i === 0 && j === 0
        ? firstEndpointIP
        : `10.${(e >> 16) & 255}.${(e >> 8) & 255}.${e & 255}`;
      eps.push(ep(ip, 8080));
    }
    const nodePort = i % 10 === 0 ? 30000 + (i / 10) % 2700 : 0;
    out.push(sps(svc({ name: `svc${i}`, clusterIP, nodePort }), eps));
  }
  return out;
}

/** The state of a cold or full sync. */
export function scaleState(n: number, m: number): ProxyState {
  return state(scaleServicePorts(n, m), { forceFullSync: true });
}

/** The next snapshot after `prev`: svc0's first endpoint replaced, only svc0 marked changed. */
export function firstEndpointMoved(prev: ProxyState, m: number, ip: string): ProxyState {
  const services = new Map(prev.services);
  const old = services.get(SCALE_FIRST_KEY)!;
  const moved = scaleServicePorts(1, m, ip)[0]!;
  services.set(SCALE_FIRST_KEY, { ...moved, info: old.info });
  return { ...prev, services, changed: new Set([SCALE_FIRST_KEY]), forceFullSync: false };
}
