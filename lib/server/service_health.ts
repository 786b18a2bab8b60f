/**
 * Upstream's per-service health check (ServiceHealthServer): for each externalTrafficPolicy
 * Local service with a healthCheckNodePort, load balancers probe that port on every node and
 * send traffic only to nodes answering 200, i.e. nodes with local ready endpoints. This file
 * holds the pure parts: which servers the applied state calls for, where they listen, and the
 * `(Request) => Response` handler.
 */
import { ipFamily, resolveNodePortAddresses, selectNodePortIPs } from "../net/mod.ts";
import type { ProxyState } from "../proxy/mod.ts";

/** One health check server the applied state calls for. */
export interface ServiceHealthTarget {
  readonly namespace: string;
  readonly name: string;
  readonly port: number;
  /** Distinct IPs of this node's ready endpoints, over every port and family of the service. */
  readonly localEndpoints: number;
}

/**
 * The health check servers for the applied snapshots, keyed by `namespace/name`. Like upstream,
 * endpoints are counted by IP (a pod serving two ports counts once) and only ready ones count,
 * so a node left with terminating endpoints only fails the check.
 */
export function serviceHealthTargets(
  states: Iterable<ProxyState>,
): Map<string, ServiceHealthTarget> {
  const ports = new Map<string, { namespace: string; name: string; port: number }>();
  const ips = new Map<string, Set<string>>();
  for (const state of states) {
    for (const sps of state.services.values()) {
      const { namespace, name } = sps.info.name;
      const key = `${namespace}/${name}`;
      if (sps.info.externalPolicyLocal && sps.info.healthCheckNodePort !== 0) {
        ports.set(key, { namespace, name, port: sps.info.healthCheckNodePort });
      }
      for (const ep of sps.allEndpoints) {
        if (!ep.isLocal || !ep.ready) continue;
        let set = ips.get(key);
        if (!set) ips.set(key, set = new Set());
        set.add(ep.ip);
      }
    }
  }
  const out = new Map<string, ServiceHealthTarget>();
  for (const [key, p] of ports) out.set(key, { ...p, localEndpoints: ips.get(key)?.size ?? 0 });
  return out;
}

/** Listen on every address (the wildcard, dual-stack where the kernel allows). */
export const ALL_ADDRESSES = "";

/**
 * Where health check servers listen, as upstream decides it: every address when
 * nodePortAddresses is empty or holds a zero-prefix CIDR; otherwise the node IPs inside those
 * CIDRs (`primary` = the node's own IPs). Falls back to every address when none matches, as
 * upstream does when it cannot find a matching node IP.
 */
export function healthCheckAddresses(
  nodePortAddresses: readonly string[],
  nodeIPs: readonly string[],
): string[] {
  if (nodePortAddresses.length === 0) return [ALL_ADDRESSES];
  const out: string[] = [];
  for (const family of ["IPv4", "IPv6"] as const) {
    const ips = nodeIPs.filter((ip) => ipFamily(ip) === family);
    const npa = resolveNodePortAddresses(nodePortAddresses, family, ips[0]);
    if (!npa.specified) continue;
    if (npa.matchAll) return [ALL_ADDRESSES];
    out.push(...selectNodePortIPs(npa, ips));
  }
  return out.length > 0 ? out : [ALL_ADDRESSES];
}

/** Where the health check servers listen, and the node IPs the net permission left out. */
export interface BindableHealthCheckAddresses {
  /** The addresses to bind: the permitted ones, or every address when none is permitted. */
  readonly addresses: readonly string[];
  /** Node IPs that `--nodeport-addresses` selects but the net permission does not allow. */
  readonly unpermitted: readonly string[];
}

/**
 * The addresses to bind, given which ones the process may listen on: Deno's net permission
 * names hosts, and a node IP missing from it cannot be bound. The permitted ones are bound;
 * only when none is, every address is (a load balancer needs the port answered somewhere).
 * The caller reports `unpermitted`, so the widening is never silent.
 */
export function bindableHealthCheckAddresses(
  addresses: readonly string[],
  canBind: (ip: string) => boolean,
): BindableHealthCheckAddresses {
  const unpermitted = addresses.filter((a) => a !== ALL_ADDRESSES && !canBind(a));
  if (unpermitted.length === 0) return { addresses: [...addresses], unpermitted };
  const permitted = addresses.filter((a) => !unpermitted.includes(a));
  return { addresses: permitted.length > 0 ? permitted : [ALL_ADDRESSES], unpermitted };
}

/**
 * The one line that says which node IPs the health check servers may not bind and what fixes
 * it: the `proxy` permission set's net list in deno.json (a CIDR covering the node IPs will do),
 * or, for a compiled binary, `deno task compile --api-server IP` for each (it adds the host to
 * the baked-in net permission).
 */
export function unpermittedHealthCheckMessage(
  unpermitted: readonly string[],
  bound: readonly string[],
): string {
  const ips = unpermitted.map((ip) => `"${ip}"`).join(", ");
  const where = bound.includes(ALL_ADDRESSES) ? "every address" : bound.join(", ");
  return `Health check servers cannot listen on the node IPs ${ips}: the net permission lacks ` +
    `them, so they listen on ${where}. To fix, add them (or a CIDR holding them) to the "proxy" ` +
    `permission set's net list in deno.json, or build with ` +
    `"deno task compile ${unpermitted.map((ip) => `--api-server ${ip}`).join(" ")}"`;
}

/** What the handler reads at request time. */
export interface ServiceHealthStatus {
  readonly localEndpoints: number;
  /** The proxy's own health (upstream's healthz verdict). */
  readonly healthy: boolean;
}

/**
 * Answers a load balancer's probe for one service: 200 only with local endpoints and a healthy
 * proxy, else 503; the endpoint count also goes into `X-Load-Balancing-Endpoint-Weight`.
 */
export function createServiceHealthHandler(
  service: { readonly namespace: string; readonly name: string },
  status: () => ServiceHealthStatus,
): (req: Request) => Response {
  return () => {
    const { localEndpoints, healthy } = status();
    const body = {
      service: { namespace: service.namespace, name: service.name },
      localEndpoints,
      serviceProxyHealthy: healthy,
    };
    return new Response(JSON.stringify(body), {
      status: localEndpoints > 0 && healthy ? 200 : 503,
      headers: {
        "Content-Type": "application/json",
        "X-Content-Type-Options": "nosniff",
        "X-Load-Balancing-Endpoint-Weight": String(localEndpoints),
      },
    });
  };
}
