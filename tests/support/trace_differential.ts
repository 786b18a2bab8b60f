/**
 * The differential harness: for one mode's tracer, render each generated state, trace every
 * generated packet through the rendered rules and compare with the reference model. A
 * disagreement is shrunk to the smallest state (fewest service ports, then endpoints) that
 * still disagrees on that packet, and printed. Any mode's test calls runDifferential().
 */
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { defaultConfig, type ProxyConfig, type ProxyModeName } from "../../lib/config/mod.ts";
import type { IPFamily, ProxyState } from "../../lib/proxy/mod.ts";
import {
  decisionsAgree,
  modelDecision,
  modelOptions,
  type ModeTracer,
  type TraceDecision,
  type TracePacket,
  type TraceResult,
} from "../../lib/trace/mod.ts";
import { buildState, familyPlan, generatePackets, generateState } from "./trace_states.ts";

/** The configurations a differential run goes through (labels for the report). */
export function differentialConfigs(): { label: string; config: ProxyConfig }[] {
  const base = {
    ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
    clusterCIDRs: ["10.0.0.0/8", "fd00:10::/64"],
  };
  return [
    { label: "defaults, --cluster-cidr", config: base },
    { label: "--masquerade-all", config: { ...base, masqueradeAll: true } },
    { label: "no --cluster-cidr", config: { ...base, clusterCIDRs: [] } },
    {
      label: "--detect-local-mode BridgeInterface --pod-bridge-interface cbr0",
      config: {
        ...base,
        detectLocalMode: "BridgeInterface",
        detectLocal: { bridgeInterface: "cbr0", interfaceNamePrefix: "" },
      },
    },
    { label: "--detect-local-mode NodeCIDR", config: { ...base, detectLocalMode: "NodeCIDR" } },
    {
      label: "--iptables-localhost-nodeports=false",
      config: { ...base, iptables: { ...base.iptables, localhostNodePorts: false } },
    },
    {
      label: "--nodeport-addresses 192.168.0.0/24,fd00:20::/64",
      config: { ...base, nodePortAddresses: ["192.168.0.0/24", "fd00:20::/64"] },
    },
  ];
}

/** One disagreement, shrunk. */
export interface Disagreement {
  readonly config: string;
  readonly state: ProxyState;
  readonly packet: TracePacket;
  readonly model: TraceDecision;
  readonly traced: TraceResult | { error: string };
}

/** What one run covers. */
export interface DifferentialOptions<Rules> {
  readonly mode: ProxyModeName;
  readonly tracer: ModeTracer<Rules>;
  readonly seed: number;
  /** Service ports per generated state. */
  readonly size: number;
  /** Generated states per family and configuration. */
  readonly states: number;
  readonly families?: readonly IPFamily[];
}

function localAddresses(family: IPFamily): string[] {
  const plan = familyPlan(family);
  return [plan.nodeIP, plan.loopback];
}

function check<Rules>(
  o: DifferentialOptions<Rules>,
  config: ProxyConfig,
  state: ProxyState,
  packet: TracePacket,
  rules?: Rules,
): { model: TraceDecision; traced: TraceResult | { error: string } } | null {
  const cfg = { ...config, mode: o.mode };
  const local = localAddresses(state.family);
  const model = modelDecision(state, packet, modelOptions(cfg, state, local, o.mode));
  let traced: TraceResult | { error: string };
  try {
    traced = o.tracer.trace(rules ?? o.tracer.rendered(cfg, state), packet, {
      localAddresses: local,
    });
  } catch (e) {
    traced = { error: e instanceof Error ? e.message : String(e) };
  }
  if ("decision" in traced && decisionsAgree(model, traced.decision)) return null;
  return { model, traced };
}

function rawPorts(state: ProxyState) {
  return [...state.services.values()].map((s) => ({ info: s.info, endpoints: s.allEndpoints }));
}

/** Removes service ports, then endpoints, while the packet still disagrees. */
export function shrink<Rules>(
  o: DifferentialOptions<Rules>,
  config: ProxyConfig,
  state: ProxyState,
  packet: TracePacket,
): ProxyState {
  let ports = rawPorts(state);
  const fails = (p: typeof ports) => check(o, config, buildState(state.family, p), packet) !== null;
  for (let i = ports.length - 1; i >= 0; i--) {
    const fewer = ports.filter((_, k) => k !== i);
    if (fails(fewer)) ports = fewer;
  }
  for (let i = 0; i < ports.length; i++) {
    for (let k = ports[i]!.endpoints.length - 1; k >= 0; k--) {
      const fewer = ports.map((p, j) =>
        j === i ? { ...p, endpoints: p.endpoints.filter((_, m) => m !== k) } : p
      );
      if (fails(fewer)) ports = fewer;
    }
  }
  return buildState(state.family, ports);
}

/** Prints a disagreement so it can be turned into a unit test. */
export function describeDisagreement(d: Disagreement): string {
  const services = [...d.state.services.values()].map((s) => ({
    info: s.info,
    endpoints: s.allEndpoints.map((e) => ({
      address: e.address,
      ready: e.ready,
      serving: e.serving,
      terminating: e.terminating,
      isLocal: e.isLocal,
      zoneHints: e.zoneHints,
      nodeHints: e.nodeHints,
    })),
    clusterEndpoints: s.clusterEndpoints.map((e) => e.address),
    localEndpoints: s.localEndpoints.map((e) => e.address),
  }));
  return [
    `config: ${d.config}`,
    `packet: ${JSON.stringify(d.packet)}`,
    `model:  ${JSON.stringify(d.model)}`,
    `traced: ${JSON.stringify(d.traced)}`,
    `state:  ${JSON.stringify(services, null, 1)}`,
  ].join("\n");
}

/** Runs the comparison; returns the (shrunk) disagreements, at most one per state. */
export function runDifferential<Rules>(o: DifferentialOptions<Rules>): {
  disagreements: Disagreement[];
  packets: number;
} {
  const disagreements: Disagreement[] = [];
  let packets = 0;
  for (const { label, config } of differentialConfigs()) {
    for (const family of o.families ?? ["IPv4", "IPv6"] as const) {
      for (let n = 0; n < o.states; n++) {
        const state = generateState(o.seed * 1000 + n, o.size, family);
        const rules = o.tracer.rendered({ ...config, mode: o.mode }, state);
        for (const packet of generatePackets(state)) {
          packets++;
          if (check(o, config, state, packet, rules) === null) continue;
          const small = shrink(o, config, state, packet);
          const again = check(o, config, small, packet)!;
          disagreements.push({ config: label, state: small, packet, ...again });
          break;
        }
      }
    }
  }
  return { disagreements, packets };
}

/**
 * The run's size: the test's small default, or under `deno task fuzz` (TRACE_FUZZ=1) 300
 * service ports and 4 states per family and configuration; TRACE_FUZZ_SIZE and TRACE_FUZZ_SEED
 * override size and seed either way.
 */
export function fuzzSettings(
  defaults: { size: number; seed: number; states: number },
): { size: number; seed: number; states: number } {
  const env = (name: string) => Number(Deno.env.get(name) ?? "NaN");
  const fuzz = Deno.env.get("TRACE_FUZZ") === "1";
  const size = Number.isInteger(env("TRACE_FUZZ_SIZE"))
    ? env("TRACE_FUZZ_SIZE")
    : fuzz
    ? 300
    : defaults.size;
  const seed = Number.isInteger(env("TRACE_FUZZ_SEED")) ? env("TRACE_FUZZ_SEED") : defaults.seed;
  return { size, seed, states: fuzz ? 4 : defaults.states };
}
