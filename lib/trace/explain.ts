/**
 * Comparing two decisions and saying how they differ in plain words: what `trace` prints when
 * the node's rules disagree with what the cluster state says they should be. Pure.
 */
import type { TraceDecision, TraceDropReason, TraceEndpoint } from "./decision.ts";

/** Endpoint shares closer than this are the same share. */
const SHARE_TOLERANCE = 1e-6;

/** True when two decisions say the same (endpoint shares within 1e-6). */
export function decisionsAgree(a: TraceDecision, b: TraceDecision): boolean {
  return differences(a, b).length === 0;
}

const REASONS: Readonly<Record<TraceDropReason, string>> = {
  "no-endpoints": "it has no endpoints",
  "no-local-endpoints": "it has no endpoint on this node and its traffic policy is Local",
  "source-range": "the source is outside its loadBalancerSourceRanges",
  "unused-port": "no service uses that port of the address",
  "unallocated-cluster-ip": "the address is in a ServiceCIDR but no service holds it",
};

/** One line saying what a decision does, e.g. `REJECT default/web:http: it has no endpoints`. */
export function describeDecision(d: TraceDecision): string {
  switch (d.kind) {
    case "pass":
      return "no service rule matches: the packet goes on untouched";
    case "forward": {
      const masq = d.masquerade ? ", source masqueraded" : "";
      const sticky = d.affinitySeconds > 0 ? `, ClientIP affinity ${d.affinitySeconds}s` : "";
      return `forward ${d.servicePort} to ${d.endpoints.length} endpoint(s)${masq}${sticky}`;
    }
    case "reject":
    case "drop": {
      const what = d.servicePort === "" ? "the service address" : d.servicePort;
      return `${d.kind.toUpperCase()} ${what}: ${REASONS[d.reason]}`;
    }
  }
}

function percent(p: number): string {
  return `${(p * 100).toFixed(1)}%`;
}

function endpointDifferences(
  name: string,
  rules: readonly TraceEndpoint[],
  state: readonly TraceEndpoint[],
): string[] {
  const out: string[] = [];
  const expected = new Map(state.map((e) => [e.address, e.probability]));
  const actual = new Map(rules.map((e) => [e.address, e.probability]));
  for (const e of rules) {
    if (!expected.has(e.address)) {
      out.push(`rules send ${name} to ${e.address}, which is no longer an endpoint`);
    }
  }
  for (const e of state) {
    const p = actual.get(e.address);
    if (p === undefined) {
      out.push(`rules never send ${name} to ${e.address}, which is an endpoint`);
    } else if (Math.abs(p - e.probability) > SHARE_TOLERANCE) {
      out.push(
        `rules send ${percent(p)} of ${name} to ${e.address}, the cluster state says ${
          percent(e.probability)
        }`,
      );
    }
  }
  return out;
}

/**
 * The differences between what the rules do (`rules`) and what the cluster state says they
 * should do (`state`), one sentence each; empty when they agree.
 */
export function differences(rules: TraceDecision, state: TraceDecision): string[] {
  if (rules.kind === "pass" && state.kind === "pass") return [];
  if (rules.kind === "forward" && state.kind === "forward") {
    const name = state.servicePort;
    const out: string[] = [];
    if (rules.servicePort !== state.servicePort) {
      out.push(`rules treat the packet as ${rules.servicePort}, the cluster state as ${name}`);
    }
    out.push(...endpointDifferences(name, rules.endpoints, state.endpoints));
    if (rules.masquerade !== state.masquerade) {
      out.push(
        rules.masquerade
          ? `rules masquerade the source of ${name}, the cluster state says they should not`
          : `rules do not masquerade the source of ${name}, the cluster state says they should`,
      );
    }
    if (rules.affinitySeconds !== state.affinitySeconds) {
      out.push(
        `rules keep ClientIP affinity for ${rules.affinitySeconds}s, the cluster state says ${state.affinitySeconds}s`,
      );
    }
    return out;
  }
  if (
    (rules.kind === "reject" || rules.kind === "drop") && rules.kind === state.kind &&
    rules.servicePort === state.servicePort && rules.reason === state.reason
  ) {
    return [];
  }
  return [`rules ${describeDecision(rules)}; the cluster state says ${describeDecision(state)}`];
}
