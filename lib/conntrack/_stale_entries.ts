/**
 * The conntrack reconciler's decision, as upstream's CleanStaleEntries makes it: a UDP or SCTP
 * flow to a service frontend (ClusterIP, external IP or LB IP and port, or a NodePort) is stale
 * when its reply source, where it was DNATed to, is not a serving endpoint of that service port.
 * Pure: entries and snapshots in, entries to delete out.
 */
import { canonicalIP } from "../net/mod.ts";
import type { Protocol, ProxyState, ServicePortState } from "../proxy/mod.ts";
import type { ConntrackEntry } from "./conntrack_entry.ts";

/** Protocols whose flows are reconciled: the connectionless ones a client keeps pinned. */
export const RECONCILED_PROTOCOLS: readonly Protocol[] = ["UDP", "SCTP"];

/** The serving endpoints (`ip|port`) a frontend's flows may legitimately go to. */
type Serving = ReadonlySet<string>;

/** Frontends of one family: service address and port, and NodePorts, per protocol. */
interface Frontends {
  readonly byAddress: Map<string, Serving>;
  readonly byNodePort: Map<string, Serving>;
  /** The node's own addresses, where a flow that was never DNATed may hit a NodePort. */
  readonly nodeIPs: ReadonlySet<string>;
}

const LOOPBACK = ["127.0.0.1", "::1"];

function servingOf(sps: ServicePortState | undefined): Serving {
  // Traffic policies, topology and terminating state are left out on purpose: changing them
  // must not cut existing flows, as for TCP; only an endpoint that no longer serves is stale.
  return new Set(
    (sps?.allEndpoints ?? []).filter((e) => e.serving).map((e) => `${canonicalIP(e.ip)}|${e.port}`),
  );
}

function addFrontends(f: Frontends, sps: ServicePortState, serving: Serving, replace: boolean) {
  const { info } = sps;
  for (const raw of [info.clusterIP, ...info.externalIPs, ...info.loadBalancerIPs]) {
    const ip = canonicalIP(raw);
    if (ip === null) continue;
    const key = `${info.protocol}|${ip}|${info.port}`;
    if (replace || !f.byAddress.has(key)) f.byAddress.set(key, serving);
  }
  if (info.nodePort > 0) {
    const key = `${info.protocol}|${info.nodePort}`;
    if (replace || !f.byNodePort.has(key)) f.byNodePort.set(key, serving);
  }
}

/**
 * The frontends of a snapshot. Service ports that were in `previous` and are gone now get an
 * empty serving set, so their flows go too (kubernetes/kubernetes#141371), unless a current
 * service port owns the same frontend. A service port with no serving endpoints keeps its
 * frontends with an empty set: its flows are all stale (kubernetes/kubernetes#139628).
 */
function frontends(state: ProxyState, previous: ProxyState | undefined): Frontends {
  const f: Frontends = {
    byAddress: new Map(),
    byNodePort: new Map(),
    nodeIPs: new Set([...state.node.ips.map((ip) => canonicalIP(ip) ?? ip), ...LOOPBACK]),
  };
  for (const sps of state.services.values()) {
    if (RECONCILED_PROTOCOLS.includes(sps.info.protocol)) {
      addFrontends(f, sps, servingOf(sps), true);
    }
  }
  for (const [key, sps] of previous?.services ?? []) {
    if (state.services.has(key) || !RECONCILED_PROTOCOLS.includes(sps.info.protocol)) continue;
    addFrontends(f, sps, new Set(), false);
  }
  return f;
}

/** Whether any service port of these snapshots has flows the reconciler looks at. */
export function reconciledProtocols(state: ProxyState, previous?: ProxyState): Protocol[] {
  const seen = new Set<Protocol>();
  for (const s of [state, previous]) {
    for (const sps of s?.services.values() ?? []) {
      if (RECONCILED_PROTOCOLS.includes(sps.info.protocol)) seen.add(sps.info.protocol);
    }
  }
  return RECONCILED_PROTOCOLS.filter((p) => seen.has(p));
}

/**
 * Whether a partial sync from `previous` to `state` can have made a flow stale: some UDP or SCTP
 * service port changed (the tracker hands unchanged ones over as the same object), appeared or
 * went away. When none did, a listing would find nothing new to delete.
 */
export function reconcileNeeded(state: ProxyState, previous: ProxyState): boolean {
  for (const [key, sps] of state.services) {
    if (RECONCILED_PROTOCOLS.includes(sps.info.protocol) && previous.services.get(key) !== sps) {
      return true;
    }
  }
  for (const [key, sps] of previous.services) {
    if (RECONCILED_PROTOCOLS.includes(sps.info.protocol) && !state.services.has(key)) return true;
  }
  return false;
}

/**
 * The entries to delete: flows to a frontend whose reply source (address and port) is not one
 * of its serving endpoints, including flows that were never DNATed (made while no rule caught
 * them) and every flow of a service port without serving endpoints. A flow to a NodePort counts
 * only when it was DNATed or went to one of the node's own addresses, so an outgoing flow that
 * happens to use a NodePort number is left alone.
 */
export function staleConntrackEntries(
  entries: readonly ConntrackEntry[],
  state: ProxyState,
  previous?: ProxyState,
): ConntrackEntry[] {
  const f = frontends(state, previous);
  const out: ConntrackEntry[] = [];
  for (const e of entries) {
    if (!RECONCILED_PROTOCOLS.includes(e.protocol)) continue;
    const target = `${e.replySrc}|${e.replySport}`;
    const byAddress = f.byAddress.get(`${e.protocol}|${e.origDst}|${e.origDport}`);
    if (byAddress) {
      if (!byAddress.has(target)) out.push(e);
      continue;
    }
    const byNodePort = f.byNodePort.get(`${e.protocol}|${e.origDport}`);
    if (!byNodePort || byNodePort.has(target)) continue;
    const dnated = e.replySrc !== e.origDst || e.replySport !== e.origDport;
    if (dnated || f.nodeIPs.has(e.origDst)) out.push(e);
  }
  return out;
}

/**
 * The `conntrack -D` filter lines that delete exactly these entries: one per distinct
 * (protocol, original destination and port, reply source and port), so flows of many clients to
 * one gone endpoint cost one kernel table walk, and a flow that was re-created towards a serving
 * endpoint since the listing does not match.
 */
export function deleteFilterLines(
  family: "IPv4" | "IPv6",
  entries: readonly ConntrackEntry[],
): string[] {
  const lines = new Set<string>();
  const f = family === "IPv4" ? "ipv4" : "ipv6";
  for (const e of entries) {
    lines.add(
      `-D -f ${f} -p ${e.protocol.toLowerCase()} --orig-dst ${e.origDst} --orig-port-dst ${e.origDport}` +
        ` --reply-src ${e.replySrc} --reply-port-src ${e.replySport}`,
    );
  }
  return [...lines];
}
