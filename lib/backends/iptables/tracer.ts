/**
 * The iptables tracer: follows a packet through nat PREROUTING (pods, outside) or OUTPUT (the
 * node), then the filter hooks it meets after routing (INPUT when the destination is local,
 * FORWARD otherwise; the node's own packets OUTPUT, then INPUT when local), then nat
 * POSTROUTING for masquerade, and turns the ways out into a TraceDecision.
 */
import { iptablesRenderOptions } from "./render_options.ts";
import { renderFullRestore } from "./restore_payload.ts";
import { type CommandRunner, runChecked } from "../../exec/mod.ts";
import { joinHostPort } from "../../net/mod.ts";
import type { TraceDecision, TraceDropReason, TracePacket, TraceResult } from "../../trace/mod.ts";
import type { ModeTracer, TraceNode } from "../../trace/mod.ts";
import {
  detectIptablesFlavour,
  IPTABLES_MODE_MODULES,
  iptablesBinaries,
  type IptablesRules,
  newConnection,
  parseIptablesRules,
  walkChain,
  type WalkContext,
  walkStart,
  type WalkState,
} from "../../netfilter/mod.ts";

/** One way the packet ends: refused by a filter rule, or delivered (maybe DNATed). */
interface Outcome {
  readonly state: WalkState;
  readonly refused: WalkState | null;
  readonly masquerade: boolean;
}

function start(packet: TracePacket): WalkState {
  return walkStart(
    newConnection({ src: packet.from, dst: packet.to, dport: packet.port, proto: packet.protocol }),
  );
}

/** `ns/name:port` from a rule comment such as `"ns/svc:http cluster IP"`, or "". */
export function commentServicePort(comment: string | null): string {
  if (comment === null) return "";
  const first = comment.replace(/^"|"$/g, "").split(" ")[0] ?? "";
  return first.includes("/") ? first : "";
}

function refusalReason(s: WalkState): TraceDropReason {
  const rule = s.verdictRule!;
  if (s.verdict === "REJECT") return "no-endpoints";
  if (s.verdictChain === "KUBE-PROXY-FIREWALL") {
    // The firewall drops whatever its nat chain did not DNAT; when that chain let the source
    // through (went on to KUBE-EXT), the service had no local endpoint to send it to.
    const fw = s.path.findIndex((c) => c.startsWith("KUBE-FW-"));
    const passed = fw !== -1 && s.path.slice(fw + 1).some((c) => c.startsWith("KUBE-EXT-"));
    return passed ? "no-local-endpoints" : "source-range";
  }
  if (s.verdictChain === "KUBE-SERVICES" || s.verdictChain === "KUBE-EXTERNAL-SERVICES") {
    return "no-local-endpoints";
  }
  throw new Error(`Packet dropped by rule "${rule.text}", which trace cannot explain`);
}

/** Follows the packet; throws lib/netfilter's UnknownMatchError on a rule it cannot evaluate. */
export function traceIptables(
  rules: IptablesRules,
  packet: TracePacket,
  node: TraceNode,
): TraceResult {
  const localAddresses = new Set(node.localAddresses);
  const fromNode = packet.source === "node";
  const isLocal = (ip: string) => localAddresses.has(ip);
  const ctx = (table: string, hook: string): WalkContext => ({
    rules,
    table,
    isLocal,
    fromPod: packet.source === "pod" && hook !== "OUTPUT",
    modules: IPTABLES_MODE_MODULES,
  });
  const natHook = fromNode ? "OUTPUT" : "PREROUTING";
  const outcomes: Outcome[] = [];
  for (const nat of walkChain(ctx("nat", natHook), natHook, start(packet))) {
    if (nat.verdict !== null && nat.verdict !== "DNAT" && nat.verdict !== "ACCEPT") {
      throw new Error(`Packet stopped in nat by "${nat.verdictRule?.text}"`);
    }
    const local = localAddresses.has(nat.packet.dst);
    const hooks = fromNode ? (local ? ["OUTPUT", "INPUT"] : ["OUTPUT"]) : [
      local ? "INPUT" : "FORWARD",
    ];
    let states: WalkState[] = [{ ...nat, verdict: null }];
    for (const hook of hooks) {
      states = states.flatMap((s) =>
        s.verdict === "DROP" || s.verdict === "REJECT"
          ? [s]
          : walkChain(ctx("filter", hook), hook, { ...s, verdict: null })
      );
    }
    for (const s of states) {
      if (s.verdict === "DROP" || s.verdict === "REJECT") {
        outcomes.push({ state: s, refused: s, masquerade: false });
        continue;
      }
      // Hairpin SNAT is implied by the endpoint; only a mark set before the endpoint's chain
      // counts as masquerade.
      const mark = nat.verdict === "DNAT" ? nat.markBeforeDnatChain : nat.packet.mark;
      const post = walkChain(ctx("nat", "POSTROUTING"), "POSTROUTING", {
        ...s,
        packet: { ...s.packet, mark },
        verdict: null,
      });
      outcomes.push({
        state: s,
        refused: null,
        masquerade: post.length > 0 && post.every((p) => p.verdict === "MASQUERADE"),
      });
    }
  }
  return { decision: decide(outcomes, packet), path: pathOf(outcomes) };
}

/** The chains every way out went through: nat ones first, then filter ones, each once. */
function pathOf(outcomes: readonly Outcome[]): string[] {
  const nat: string[] = [];
  const filter: string[] = [];
  for (const o of outcomes) {
    for (const c of o.state.path) {
      const list = c.startsWith("filter:") ? filter : nat;
      if (!list.includes(c)) list.push(c);
    }
  }
  return [...nat, ...filter];
}

function decide(outcomes: readonly Outcome[], packet: TracePacket): TraceDecision {
  const forwarded = outcomes.filter((o) => o.refused === null && o.state.packet.dnated);
  if (forwarded.length === 0) {
    const refused = outcomes.find((o) => o.refused !== null)?.refused;
    if (refused === undefined || refused === null) return { kind: "pass" };
    return {
      kind: refused.verdict === "REJECT" ? "reject" : "drop",
      servicePort: commentServicePort(refused.verdictRule?.comment ?? null),
      reason: refusalReason(refused),
    };
  }
  const shares = new Map<string, number>();
  for (const o of forwarded) {
    const address = joinHostPort(o.state.packet.dst, o.state.packet.dport);
    shares.set(address, (shares.get(address) ?? 0) + o.state.weight);
  }
  void packet;
  return {
    kind: "forward",
    servicePort: forwarded[0]!.state.servicePortComment,
    endpoints: [...shares.keys()].sort().map((address) => ({
      address,
      probability: shares.get(address)!,
    })),
    masquerade: forwarded.every((o) => o.masquerade),
    affinitySeconds: Math.max(...forwarded.map((o) => o.state.affinitySeconds)),
  };
}

/** iptables mode's tracer over iptables-save text (or the mode's restore input). */
export const iptablesTracer: ModeTracer<IptablesRules> = {
  async read(runner: CommandRunner, family) {
    const flavour = await detectIptablesFlavour(runner);
    const save = iptablesBinaries(family, flavour).save;
    const nat = await runChecked(runner, { cmd: save, args: ["-t", "nat"] });
    const filter = await runChecked(runner, { cmd: save, args: ["-t", "filter"] });
    return parseIptablesRules(nat + filter, family);
  },
  rendered(config, state) {
    const text = renderFullRestore(state, iptablesRenderOptions(config, state.family));
    return parseIptablesRules(text, state.family);
  },
  trace: traceIptables,
};
