/**
 * Packet-flow cases for either IP family, in the style of upstream's runPacketFlowTests: a
 * source namespace, a protocol, a destination, the endpoints that must answer (all of them and
 * no others) or how every attempt must fail, and whether the endpoint sees a masqueraded source.
 * The client's own address is taken from the topology, so IPv6 cases need no extra table.
 */
import assert from "node:assert/strict";
import {
  type NamespaceRef,
  type ProbeAnswer,
  type ProbeProto,
  scaledMs,
  type Topology,
  TOPOLOGY_IPS,
} from "../../../scripts/netns/mod.ts";

/** One packet-flow case. */
export interface FlowCheck {
  readonly name: string;
  readonly from: NamespaceRef;
  readonly proto?: ProbeProto;
  /** `ip:port`, IPv6 as `[ip]:port`. */
  readonly to: string;
  /** Pod names that answer (every one of them, no other); or how every attempt fails. */
  readonly expect: readonly string[] | "refused" | "timeout";
  /** Whether the endpoint sees a source other than the client's own address. */
  readonly masq?: boolean;
  /** When masqueraded, the one source the endpoint must see (e.g. the node IP after SNAT). */
  readonly masqSource?: string;
  /**
   * Session affinity: attempts go one after another and every one must reach the same
   * endpoint, one of `expect`.
   */
  readonly sticky?: boolean;
}

/** The host part of `ip:port` / `[ip]:port`, without brackets. */
export function peerHost(peer: string): string {
  const host = peer.slice(0, peer.lastIndexOf(":"));
  return host.startsWith("[") ? host.slice(1, -1) : host;
}

/** The address `from`'s packets to `to` carry before any NAT; null for the node namespaces. */
export function clientAddress(topo: Topology, from: NamespaceRef, to: string): string | null {
  const v6 = to.startsWith("[");
  if (from === "external") return v6 ? TOPOLOGY_IPS.external6 : TOPOLOGY_IPS.external;
  if (from === "node" || from === "node2") return null;
  const pod = topo.pod(from);
  return v6 ? pod.ip6 : pod.ip;
}

/** Judges one case's answers; returns why it failed, or null. */
export function judgeFlow(
  c: FlowCheck,
  source: string | null,
  answers: readonly ProbeAnswer[],
): string | null {
  const seen = JSON.stringify(answers);
  if (typeof c.expect === "string") {
    return answers.every((a) => !a.ok && a.error === c.expect)
      ? null
      : `expected every attempt to fail with ${c.expect}, got ${seen}`;
  }
  const names = new Set<string>();
  for (const a of answers) {
    if (!a.ok) return `expected answers from ${c.expect.join(", ")}, got ${seen}`;
    names.add(a.name);
    if (c.masq !== undefined && source !== null) {
      const masqueraded = peerHost(a.peer) !== source;
      if (masqueraded !== c.masq) {
        return `expected ${c.masq ? "a masqueraded" : "the original"} source, got ${a.peer}`;
      }
      if (c.masq && c.masqSource !== undefined && peerHost(a.peer) !== c.masqSource) {
        return `expected ${c.masqSource} as the source, got ${a.peer}`;
      }
    }
  }
  if (c.sticky) {
    const [only, ...more] = names;
    return more.length === 0 && only !== undefined && c.expect.includes(only)
      ? null
      : `expected every attempt to reach the same one of ${c.expect.join(", ")}, got ${seen}`;
  }
  const got = [...names].sort().join(", ");
  const want = [...c.expect].sort().join(", ");
  return got === want ? null : `expected endpoints {${want}}, got {${got}}: ${seen}`;
}

/**
 * Probes one case: 20 attempts when answers are expected, 2 when failures are. An answer may
 * take E2E_TIME_SCALE times longer: on the emulated guest's one vCPU the probe and the echo
 * servers share the CPU with the proxy, and a busy second there (a collection, a process
 * start) outlasts a native timeout. A timeout that is the expected outcome stays short.
 */
export function probeFlow(topo: Topology, c: FlowCheck): Promise<ProbeAnswer[]> {
  const fails = typeof c.expect === "string";
  return topo.probe({
    from: c.from,
    proto: c.proto ?? "tcp",
    to: c.to,
    count: fails ? 2 : c.sticky ? 10 : 20,
    timeoutMs: c.expect === "timeout" ? 500 : c.expect === "refused" ? 2000 : scaledMs(2000),
    ...(c.sticky ? { concurrency: 1 } : {}),
  });
}

/** Runs every case in order and fails once, listing each case that went wrong. */
export async function checkFlows(topo: Topology, cases: readonly FlowCheck[]): Promise<void> {
  const failures: string[] = [];
  for (const c of cases) {
    const started = Date.now();
    const answers = await probeFlow(topo, c);
    let failure = judgeFlow(c, clientAddress(topo, c.from, c.to), answers);
    // The probe's own start-up counts too, so an emulated guest gets E2E_TIME_SCALE times more.
    if (failure === null && c.expect === "refused" && Date.now() - started > scaledMs(1500)) {
      failure = "REJECT must answer at once, not after a timeout";
    }
    if (failure !== null) failures.push(`${c.name}: ${failure}`);
  }
  assert.deepEqual(failures, [], failures.join("\n"));
}

/** Polls `c` until it passes or `timeoutMs` runs out (e.g. after a manifest edit). */
export async function eventuallyFlows(
  topo: Topology,
  c: FlowCheck,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (true) {
    const answers = await probeFlow(topo, c);
    const failure = judgeFlow(c, clientAddress(topo, c.from, c.to), answers);
    if (failure === null) return;
    if (Date.now() > deadline) assert.fail(`${c.name}, after ${timeoutMs} ms: ${failure}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
