/**
 * What the kernel holds for our virtual servers, as the last full sync read it and every
 * applied write since left it: the "current" side of a partial sync's diff, so a sync driven
 * by a few changed ports reads nothing. Draining real servers appear at weight 0, with unknown
 * connection counts (a removed one therefore drains, and the periodic check deletes it).
 */
import type { GracefulTerminationList } from "./_graceful_termination.ts";
import type { IpvsTable, RealServer, VirtualServerState } from "./virtual_server.ts";

/** Our virtual servers by virtualServerKey; entries are never mutated, only replaced. */
export type KernelView = Map<string, VirtualServerState>;

/**
 * Updates `view` for the virtual servers `keys` once the diff from `current` to `desired` was
 * applied and committed to `draining`: a wanted one holds its wanted real servers plus those
 * still draining; an unwanted one leaves the view (deleted, or not ours to touch).
 */
export function updateKernelView(
  view: KernelView,
  keys: Iterable<string>,
  desired: IpvsTable,
  current: IpvsTable,
  draining: GracefulTerminationList,
): void {
  for (const key of keys) {
    const want = desired.get(key);
    if (want === undefined) {
      view.delete(key);
      continue;
    }
    let kept: Map<string, RealServer> | null = null;
    const have = current.get(key);
    if (have !== undefined && draining.size > 0) {
      for (const [rsKey, rs] of have.realServers) {
        if (want.realServers.has(rsKey) || !draining.has(key, rsKey)) continue;
        kept ??= new Map(want.realServers);
        kept.set(rsKey, { address: rs.address, port: rs.port, weight: 0 });
      }
    }
    view.set(key, kept === null ? want : { vs: want.vs, realServers: kept });
  }
}

/** The view's entries for `keys` (those it has), as a table for diffIpvs. */
export function viewSubset(view: KernelView, keys: Iterable<string>): IpvsTable {
  const out = new Map<string, VirtualServerState>();
  for (const key of keys) {
    const vs = view.get(key);
    if (vs !== undefined) out.set(key, vs);
  }
  return out;
}

/** Takes real servers the drain check deleted (or found gone) out of the view. */
export function dropFromKernelView(
  view: KernelView,
  removed: Iterable<readonly [vsKey: string, rsKey: string]>,
): void {
  for (const [vsKey, rsKey] of removed) {
    const have = view.get(vsKey);
    if (have === undefined || !have.realServers.has(rsKey)) continue;
    const realServers = new Map(have.realServers);
    realServers.delete(rsKey);
    view.set(vsKey, { vs: have.vs, realServers });
  }
}
