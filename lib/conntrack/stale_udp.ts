/**
 * Stale UDP conntrack entries: after the rules change, a UDP flow whose conntrack entry still
 * DNATs to an endpoint that went away would black-hole (DNS clients reuse their source port),
 * so such entries are deleted once the new rules are in place.
 */
import { COMMAND_NOT_FOUND, type CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { Endpoint, IPFamily, ProxyState, ServicePortState } from "../proxy/mod.ts";

/** One `conntrack -D` filter: flows to a service address (or NodePort) DNATed to `endpointIP`. */
export interface StaleFlowFilter {
  /** Original destination IP (a clusterIP, externalIP or LB IP); absent for NodePort filters. */
  readonly origDst?: string;
  /** Original destination port for NodePort filters. */
  readonly origPortDst?: number;
  /** The endpoint the flow was DNATed to; absent = any (the service had no endpoints). */
  readonly endpointIP?: string;
}

function reachableIPs(sps: ServicePortState | undefined): Set<string> {
  return new Set((sps?.allReachableEndpoints ?? []).map((e: Endpoint) => e.ip));
}

function serviceIPs(sps: ServicePortState): string[] {
  return [sps.info.clusterIP, ...sps.info.externalIPs, ...sps.info.loadBalancerIPs];
}

/**
 * The filters that remove stale UDP flows between two snapshots of one family: flows to
 * endpoints that are gone, and flows to services that had no endpoints and now have some.
 */
export function staleUdpFlows(prev: ProxyState | undefined, next: ProxyState): StaleFlowFilter[] {
  if (!prev) return [];
  const out: StaleFlowFilter[] = [];
  const seen = new Set<string>();
  const add = (f: StaleFlowFilter) => {
    const k = JSON.stringify(f);
    if (!seen.has(k)) {
      seen.add(k);
      out.push(f);
    }
  };
  for (const [key, old] of prev.services) {
    if (old.info.protocol !== "UDP") continue;
    const cur = next.services.get(key);
    // The tracker hands unchanged service ports over as the same object: nothing went stale.
    if (cur === old) continue;
    const now = reachableIPs(cur);
    for (const ip of reachableIPs(old)) {
      if (now.has(ip)) continue;
      for (const dst of serviceIPs(old)) add({ origDst: dst, endpointIP: ip });
      if (old.info.nodePort > 0) add({ origPortDst: old.info.nodePort, endpointIP: ip });
    }
  }
  for (const [key, cur] of next.services) {
    if (cur.info.protocol !== "UDP" || cur.allReachableEndpoints.length === 0) continue;
    const old = prev.services.get(key);
    if (old && old.allReachableEndpoints.length > 0) continue;
    for (const dst of serviceIPs(cur)) add({ origDst: dst });
  }
  return out;
}

/** The `conntrack` arguments that delete the flows one filter matches. */
export function conntrackDeleteArgs(family: IPFamily, f: StaleFlowFilter): string[] {
  const args = ["-D", "-f", family === "IPv4" ? "ipv4" : "ipv6", "-p", "udp"];
  if (f.origDst !== undefined) args.push("--orig-dst", f.origDst);
  if (f.origPortDst !== undefined) args.push("--orig-port-dst", String(f.origPortDst));
  if (f.endpointIP !== undefined) args.push("--dst-nat", f.endpointIP);
  return args;
}

const DELETED = /(\d+) flow entries have been deleted/;

/**
 * Runs one `conntrack -D` per filter; returns how many entries were deleted. "Nothing matched"
 * (exit 1, 0 deleted) is not an error; other failures are logged and the rest still run.
 */
export async function deleteStaleFlows(
  runner: CommandRunner,
  family: IPFamily,
  filters: readonly StaleFlowFilter[],
  logger: Logger,
): Promise<number> {
  let deleted = 0;
  for (const f of filters) {
    const args = conntrackDeleteArgs(family, f);
    const out = await runner({ cmd: "conntrack", args });
    const m = DELETED.exec(out.stderr) ?? DELETED.exec(out.stdout);
    if (m) deleted += Number(m[1]);
    if (out.code !== 0 && !(m && Number(m[1]) === 0)) {
      logger.error("Failed to delete stale UDP conntrack entries", {
        command: `conntrack ${args.join(" ")}`,
        code: out.code,
        stderr: out.stderr.trim(),
      });
      if (out.code === COMMAND_NOT_FOUND) break;
    }
  }
  if (deleted > 0) logger.debug(2, "Deleted stale UDP conntrack entries", { family, deleted });
  return deleted;
}
