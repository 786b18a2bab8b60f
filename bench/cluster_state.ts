/**
 * ProxyStates for the benchmarks: N ClusterIP services with two endpoints each (or `each`), in
 * the test IP plan (service IPs 172.30.0.0/16, pods 10.0.0.0/8), built with the iptables test
 * fixtures.
 */
import type { Endpoint, ProxyState, ServicePortState } from "../lib/proxy/mod.ts";
import { ep, key, sps, state, svc } from "../tests/backends/iptables/state_fixtures.ts";

/** The pod network the benchmarks render for (--cluster-cidr). */
export const BENCH_CLUSTER_CIDRS: readonly string[] = ["10.0.0.0/8"];

/** The first service, whose endpoint the partial-sync benchmark moves back and forth. */
export const FIRST_SERVICE_KEY = key("ns1", "svc0");

/**
 * N service ports in the IP plan: svc<i> at 172.30.<i / 250>.<i % 250 + 1>, its endpoints chosen
 * by `endpoints(i, hi, lo)` with hi and lo those two parts.
 */
function planServicePorts(
  n: number,
  endpoints: (i: number, hi: number, lo: number) => Endpoint[],
): ServicePortState[] {
  if (!Number.isInteger(n) || n < 1 || n > 60_000) {
    throw new RangeError(`Invalid service count "${n}": expected an integer from 1 to 60000`);
  }
  const out: ServicePortState[] = [];
  for (let i = 0; i < n; i++) {
    const hi = Math.floor(i / 250);
    const lo = i % 250;
    out.push(
      sps(svc({ name: `svc${i}`, clusterIP: `172.30.${hi}.${lo + 1}` }), endpoints(i, hi, lo)),
    );
  }
  return out;
}

/** N service ports; svc0's first endpoint is `firstEndpointIP`, the rest are fixed. */
export function benchServicePorts(n: number, firstEndpointIP = "10.0.0.2"): ServicePortState[] {
  return planServicePorts(n, (i, hi, lo) => [
    ep(i === 0 ? firstEndpointIP : `10.${hi}.${lo}.2`, 8080),
    ep(`10.200.${hi}.${lo}`, 8080),
  ]);
}

/** A state that makes the proxier rewrite everything (an hourly or first sync). */
export function fullSyncState(n: number): ProxyState {
  return state(benchServicePorts(n), { forceFullSync: true });
}

/** A state where only svc0 changed, its first endpoint now being `firstEndpointIP`. */
export function oneServiceChangedState(n: number, firstEndpointIP: string): ProxyState {
  return state(benchServicePorts(n, firstEndpointIP), { changed: [FIRST_SERVICE_KEY] });
}

/** N ClusterIP services with `each` endpoints apiece (the benchmarks use 10), to sync whole. */
export function manyEndpointsState(n: number, each: number): ProxyState {
  if (!Number.isInteger(each) || each < 1 || each > 250) {
    throw new RangeError(`Invalid endpoint count "${each}": expected an integer from 1 to 250`);
  }
  const ports = planServicePorts(
    n,
    (_, hi, lo) => Array.from({ length: each }, (_, k) => ep(`10.${hi}.${lo}.${k + 2}`, 8080)),
  );
  return state(ports, { forceFullSync: true });
}
