/**
 * The current validated EndpointSlices, grouped by Service, and the merge that turns a
 * Service's slices into one sorted, deduplicated endpoint list per service port (upstream's
 * EndpointSliceCache). Slices are tracked by slice name so an endpoint moving between two slices
 * of a Service never disappears in between.
 */
import { joinHostPort } from "../net/mod.ts";
import type { Endpoint, IPFamily } from "./types.ts";
import { servicePortKey } from "./types.ts";
import type { ValidatedEndpointSlice } from "./validate_endpoint_slice.ts";

/** Orders strings by UTF-16 code units, as Go's sort.Strings orders bytes for ASCII keys. */
const compareText = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * Merges one Service's slices of one family into endpoints per servicePortKey. An endpoint in
 * several slices is kept once, preferring a non-terminating copy (a reused pod IP); lists are
 * sorted by `ip:port` text, as upstream sorts them, so rule output is deterministic.
 */
export function mergeEndpointSlices(
  slices: Iterable<ValidatedEndpointSlice>,
  family: IPFamily,
  nodeName: string,
): Map<string, Endpoint[]> {
  const byPort = new Map<string, Map<string, Endpoint>>();
  const ordered = [...slices].filter((s) => s.addressType === family)
    .sort((a, b) => compareText(a.name, b.name));
  for (const slice of ordered) {
    for (const port of slice.ports) {
      const key = servicePortKey({
        namespace: slice.namespace,
        name: slice.serviceName,
        port: port.name,
        protocol: port.protocol,
      });
      let set = byPort.get(key);
      if (!set) byPort.set(key, set = new Map());
      for (const ep of slice.endpoints) {
        const address = joinHostPort(ep.ip, port.port);
        if (set.has(address) && ep.terminating) continue;
        set.set(address, {
          ip: ep.ip,
          port: port.port,
          address,
          ready: ep.ready,
          serving: ep.serving,
          terminating: ep.terminating,
          isLocal: nodeName !== "" && ep.nodeName === nodeName,
          nodeName: ep.nodeName,
          zone: ep.zone,
          zoneHints: ep.zoneHints,
          nodeHints: ep.nodeHints,
        });
      }
    }
  }
  const out = new Map<string, Endpoint[]>();
  for (const [key, set] of byPort) {
    if (set.size === 0) continue;
    out.set(key, [...set.values()].sort((a, b) => compareText(a.address, b.address)));
  }
  return out;
}

/** Holds the current slices; the tracker asks it for a Service's merged endpoints. */
export class EndpointSliceCache {
  readonly #byService = new Map<string, Map<string, ValidatedEndpointSlice>>();
  readonly #bySliceKey = new Map<string, ValidatedEndpointSlice>();

  /** `nodeName` decides which endpoints are local. */
  constructor(readonly nodeName: string) {}

  /** The stored slice with this `namespace/name`, if any. */
  get(sliceKey: string): ValidatedEndpointSlice | undefined {
    return this.#bySliceKey.get(sliceKey);
  }

  /** Stores (or replaces) a slice, moving it if its Service label changed; returns the old one. */
  set(slice: ValidatedEndpointSlice): ValidatedEndpointSlice | undefined {
    const previous = this.delete(slice.key);
    this.#bySliceKey.set(slice.key, slice);
    let group = this.#byService.get(slice.serviceKey);
    if (!group) this.#byService.set(slice.serviceKey, group = new Map());
    group.set(slice.key, slice);
    return previous;
  }

  /** Forgets a slice; returns what was stored. */
  delete(sliceKey: string): ValidatedEndpointSlice | undefined {
    const previous = this.#bySliceKey.get(sliceKey);
    if (!previous) return undefined;
    this.#bySliceKey.delete(sliceKey);
    const group = this.#byService.get(previous.serviceKey);
    group?.delete(sliceKey);
    if (group?.size === 0) this.#byService.delete(previous.serviceKey);
    return previous;
  }

  /** The slices feeding one Service (`namespace/name`). */
  slicesFor(serviceKey: string): Iterable<ValidatedEndpointSlice> {
    return this.#byService.get(serviceKey)?.values() ?? [];
  }

  /** One Service's merged endpoints of `family`, by servicePortKey. */
  endpointsFor(serviceKey: string, family: IPFamily): Map<string, Endpoint[]> {
    return mergeEndpointSlices(this.slicesFor(serviceKey), family, this.nodeName);
  }

  /** Number of stored slices. */
  get size(): number {
    return this.#bySliceKey.size;
  }
}
