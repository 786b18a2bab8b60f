/**
 * Turns the branches of an nftables walk into one TraceDecision: the drop or reject and why
 * (read from the chain or map element that decided it), the endpoints with their summed
 * probabilities, the masquerade mark and the affinity timeout. The names it reads are those of
 * lib/backends/nftables/names.ts. Pure.
 */
import {
  CLUSTER_IPS_CHECK,
  FIREWALL_CHECK,
  NO_ENDPOINT_NODEPORTS,
  NO_ENDPOINT_SERVICES,
} from "./_names.ts";
import { joinHostPort } from "../../net/mod.ts";
import type { TraceDecision, TraceEndpoint, TraceResult } from "../../trace/mod.ts";
import type { NftBranch } from "./_trace_walk.ts";

/** `ns/svc:port cluster IP` → `ns/svc:port` (a service port name holds no space). */
function servicePortOf(comment: string): string {
  return comment.split(" ")[0] ?? "";
}

/**
 * Paths merged, each step once: a step another branch did not take goes right after the last
 * step both took, so alternatives (endpoint elements) sit side by side.
 */
export function mergePaths(paths: readonly (readonly string[])[]): string[] {
  const out: string[] = [];
  for (const path of paths) {
    const mine = new Set(path);
    let cursor = -1;
    for (const step of path) {
      const at = out.indexOf(step);
      if (at >= 0) {
        cursor = at;
        continue;
      }
      // Past the other branches' alternatives at this point, then in.
      while (cursor + 1 < out.length && !mine.has(out[cursor + 1]!)) cursor++;
      out.splice(++cursor, 0, step);
    }
  }
  return out;
}

function stopDecision(b: NftBranch): TraceDecision {
  const stop = b.stop!;
  if (stop.chain === FIREWALL_CHECK && stop.kind === "drop") {
    return {
      kind: "drop",
      servicePort: servicePortOf(b.lastSetElement?.comment ?? ""),
      reason: "source-range",
    };
  }
  if (stop.chain === CLUSTER_IPS_CHECK) {
    // The reject matches @cluster-ips; the drop after it, the rest of the ServiceCIDRs.
    const reason = stop.kind === "drop" ? "unallocated-cluster-ip" : "unused-port";
    return { kind: stop.kind, servicePort: "", reason };
  }
  const el = b.lastVerdictElement;
  if (el !== null && (el.set === NO_ENDPOINT_SERVICES || el.set === NO_ENDPOINT_NODEPORTS)) {
    return {
      kind: stop.kind,
      servicePort: servicePortOf(el.comment),
      reason: stop.kind === "drop" ? "no-local-endpoints" : "no-endpoints",
    };
  }
  throw new RangeError(
    `A ${stop.kind} in chain "${stop.chain}" that no service explains (path: ${
      b.path.join(" > ")
    })`,
  );
}

/** The decision and path of a finished walk. Throws when branches disagree on the outcome. */
export function decideNft(branches: readonly NftBranch[]): TraceResult {
  const stopped = branches.filter((b) => b.stop !== null);
  const forwarded = branches.filter((b) => b.stop === null && b.dnat !== null);
  const passed = branches.filter((b) => b.stop === null && b.dnat === null);
  const kinds = [stopped, forwarded, passed].filter((g) => g.length > 0).length;
  if (kinds > 1) {
    const describe = (b: NftBranch) =>
      `${(b.weight * 100).toFixed(1)}% ${b.stop?.kind ?? (b.dnat ? "dnat" : "pass")} via ${
        b.path.join(" > ")
      }`;
    throw new RangeError(
      `The rules treat this packet inconsistently: ${branches.map(describe).join("; ")}`,
    );
  }
  if (stopped.length > 0) {
    const first = stopped[0]!;
    return { decision: stopDecision(first), path: mergePaths(stopped.map((b) => b.path)) };
  }
  const path = mergePaths(branches.map((b) => b.path));
  if (forwarded.length === 0) return { decision: { kind: "pass" }, path };
  const shares = new Map<string, number>();
  for (const b of forwarded) {
    const address = joinHostPort(b.dnat!.ip, b.dnat!.port);
    shares.set(address, (shares.get(address) ?? 0) + b.weight);
  }
  const endpoints: TraceEndpoint[] = [...shares]
    .map(([address, probability]) => ({ address, probability }))
    .sort((a, b) => (a.address < b.address ? -1 : a.address > b.address ? 1 : 0));
  const dispatch = forwarded.find((b) => b.dispatch !== null)?.dispatch ?? null;
  return {
    decision: {
      kind: "forward",
      servicePort: servicePortOf(dispatch?.comment ?? ""),
      endpoints,
      // Hairpin SNAT (marked only in postrouting) is implied by the endpoint, not counted.
      masquerade: forwarded.some((b) => b.masqueraded && b.markedEarly),
      affinitySeconds: Math.max(...forwarded.map((b) => b.affinitySeconds)),
    },
    path,
  };
}
