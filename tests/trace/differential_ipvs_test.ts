/**
 * Differential test of IPVS mode: the tracer over what the renderer writes for generated
 * states must give the reference model's decision for every generated packet, except where
 * the model and upstream's IPVS proxier (which the renderer follows) are known to part; each
 * such class is named below with the smallest case, and any other disagreement fails the test
 * with its shrunk state. `deno task fuzz` runs it larger (TRACE_FUZZ_SIZE, TRACE_FUZZ_SEED).
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import type { ProxyState } from "../../lib/proxy/mod.ts";
import {
  decisionsAgree,
  modelDecision,
  modelOptions,
  type TraceDecision,
  type TracePacket,
  type TraceResult,
} from "../../lib/trace/mod.ts";
import { ipvsTracer } from "../../lib/trace/ipvs/mod.ts";
import {
  describeDisagreement,
  differentialConfigs,
  fuzzSettings,
  shrink,
} from "../support/trace_differential.ts";
import { familyPlan, generatePackets, generateState } from "../support/trace_states.ts";

type Known = (state: ProxyState, p: TracePacket, m: TraceDecision, t: TraceDecision) => boolean;

function portOf(state: ProxyState, name: string) {
  return [...state.services.values()].find((s) =>
    `${s.info.name.namespace}/${s.info.name.name}${
      s.info.name.port ? ":" + s.info.name.port : ""
    }` ===
      name
  );
}

/**
 * Where upstream's IPVS proxier and the model part (the renderer follows upstream):
 * - source ranges without endpoints: ipvs fills KUBE-LOAD-BALANCER-FW whatever the endpoints,
 *   so an LB with ranges and no endpoint DROPs outside sources (the model: REJECT no-endpoints).
 *   Smallest: LB 203.0.114.1 ranges [203.0.113.0/24], no endpoints, pod 10.0.9.9 → LB IP.
 * - node sources: ipvs hooks KUBE-PROXY-FIREWALL in INPUT and FORWARD only; from the node only
 *   the LB IP as source is dropped (KUBE-IPVS-OUT-FILTER). Smallest: LB with ranges excluding
 *   the node, one endpoint, node 192.168.0.2 → LB IP: forwarded (model: DROP source-range).
 * - ITP Local without local endpoints on a service that is also reachable from outside with
 *   ETP Cluster: its ClusterIP virtual server gets the cluster endpoints (PR #97081 fallback;
 *   the model: REJECT). Smallest: ITP Local + LB, one remote endpoint, pod → ClusterIP.
 * - an empty virtual server: the kernel cannot tell "no local endpoint" from "no endpoint";
 *   the tracer says no-endpoints where the model says no-local-endpoints.
 */
const KNOWN: Record<string, Known> = {
  "source ranges without endpoints": (s, p, m, t) =>
    m.kind === "reject" && m.reason === "no-endpoints" && t.kind === "drop" &&
    t.reason === "source-range" && t.servicePort === m.servicePort &&
    (portOf(s, m.servicePort)?.info.loadBalancerSourceRanges.length ?? 0) > 0 &&
    (portOf(s, m.servicePort)?.info.loadBalancerIPs.includes(p.to) ?? false),
  "node source to a source-ranged LB": (_s, p, m, t) =>
    p.source === "node" && p.from !== p.to && m.kind === "drop" && m.reason === "source-range" &&
    t.kind === "forward" && t.servicePort === m.servicePort,
  "ITP Local falls back to cluster endpoints": (s, _p, m, t) => {
    const sps = m.kind === "reject" ? portOf(s, m.servicePort) : undefined;
    return m.kind === "reject" && m.reason === "no-local-endpoints" && t.kind === "forward" &&
      sps !== undefined && sps.info.internalPolicyLocal && sps.localEndpoints.length === 0 &&
      t.endpoints.map((e) => e.address).join() ===
        [...sps.clusterEndpoints.map((e) => e.address)].sort().join();
  },
  "empty virtual server reason": (_s, _p, m, t) =>
    m.kind === "reject" && m.reason === "no-local-endpoints" && t.kind === "reject" &&
    t.reason === "no-endpoints" && t.servicePort === m.servicePort,
};

Deno.test("ipvs rules traced agree with the reference model on generated states", () => {
  const { size, seed, states } = fuzzSettings({ size: 40, seed: 13, states: 1 });
  const counts = new Map<string, number>(Object.keys(KNOWN).map((k) => [k, 0]));
  const unexplained: string[] = [];
  let packets = 0;
  let agreed = 0;
  for (const { label, config } of differentialConfigs()) {
    const cfg = { ...config, mode: "ipvs" as const };
    for (const family of ["IPv4", "IPv6"] as const) {
      const plan = familyPlan(family);
      const node = { localAddresses: [plan.nodeIP, plan.loopback] };
      for (let n = 0; n < states; n++) {
        const state = generateState(seed * 1000 + n, size, family);
        const rules = ipvsTracer.rendered(cfg, state);
        const options = modelOptions(cfg, state, node.localAddresses, "ipvs");
        for (const packet of generatePackets(state)) {
          packets++;
          const m = modelDecision(state, packet, options);
          let traced: TraceResult | { error: string };
          try {
            traced = ipvsTracer.trace(rules, packet, node);
          } catch (e) {
            traced = { error: e instanceof Error ? e.message : String(e) };
          }
          if ("decision" in traced) {
            if (decisionsAgree(m, traced.decision)) {
              agreed++;
              continue;
            }
            const t = traced.decision;
            const known = Object.entries(KNOWN).find(([, f]) => f(state, packet, m, t));
            if (known !== undefined) {
              counts.set(known[0], counts.get(known[0])! + 1);
              continue;
            }
          }
          if (unexplained.length >= 3) continue;
          const small = shrink(
            { mode: "ipvs", tracer: ipvsTracer, seed, size, states },
            config,
            state,
            packet,
          );
          unexplained.push(
            describeDisagreement({ config: label, state: small, packet, model: m, traced }),
          );
        }
      }
    }
  }
  console.log(
    `ipvs differential: seed ${seed}, ${size} service ports, ${packets} packets, ${agreed} agree;`,
    `known model differences: ${[...counts].map(([k, v]) => `${k} ${v}`).join(", ")}`,
  );
  deepStrictEqual(unexplained, []);
  ok(agreed > packets * 0.9, `only ${agreed} of ${packets} packets agree`);
});
