/**
 * The UDP continuity case, in any mode: a sender that keeps its source port (two-way, and
 * one-way whose flow stays [UNREPLIED]) follows its endpoint's deletion within one sync, loses
 * its conntrack entries and is told the port is unreachable when the service scales to zero,
 * and resumes when an endpoint returns. IPVS mode behaves as the rule-based modes here, by other
 * means: the UDP real server goes at once (no graceful termination for UDP, as upstream), and
 * with expire_nodest_conn=1 the next packet of a flow to a deleted real server expires IPVS's
 * connection and, with net.ipv4.vs.conntrack=1, its conntrack entry; a virtual server without
 * real servers answers ICMP port unreachable itself (the kernel's ip_vs_leave), where the
 * rule-based modes' REJECT rule does.
 */
import assert from "node:assert/strict";
import { endpointSlice, service } from "./cluster_objects.ts";
import { DNS, flowsTo, longestGap, oneWaySink, SINK, sleep, summary } from "./continuity.ts";
import { type ContinuityStage, SINK_PORT } from "./continuity_stage.ts";

const TWO_WAY_VIP = "172.30.0.53", ONE_WAY_VIP = "172.30.0.54";
const A = { name: "p1", ip: "10.0.1.2" }, B = { name: "p2", ip: "10.0.2.2" };

/**
 * Deletion, scale to zero and return: each change is published, applied by the proxy, and
 * followed by a second of settled traffic; "within one sync" means by the time the proxy has
 * applied the change, plus the settle time for the next packet.
 */
export async function udpFollowCase(stage: ContinuityStage): Promise<void> {
  const { mode, topo } = stage;
  const margin = stage.settleMs;
  const state = (eps: string[]) => [
    service("demo", "dns", TWO_WAY_VIP, DNS),
    endpointSlice("demo", "dns", eps, DNS),
    service("demo", "sink", ONE_WAY_VIP, SINK),
    endpointSlice("demo", "sink", eps, SINK),
  ];
  await stage.startServers([A.name, B.name]);
  await stage.publishApplied(state([A.ip]));
  const sinkA = await oneWaySink(topo, A.name, SINK_PORT);
  const sinkB = await oneWaySink(topo, B.name, SINK_PORT);
  // Sending ends when the steps are done (stop()); the duration is only an upper bound.
  const rate = ["--interval-ms", "50", "--duration-ms", "600000"];
  const t0 = stage.startAt();
  const twoWay = stage.traffic("client", t0, [
    "--proto",
    "udp",
    "--to",
    `${TWO_WAY_VIP}:53`,
    "--source-port",
    "40053",
    ...rate,
  ]);
  const oneWay = stage.traffic("client2", t0, [
    "--proto",
    "udp",
    "--to",
    `${ONE_WAY_VIP}:54`,
    "--source-port",
    "40054",
    ...rate,
  ]);
  const now = () => Date.now() - t0;
  const oneWayTarget = async () =>
    (await flowsTo(topo, ONE_WAY_VIP)).filter((e) =>
      e.origSport === 40054 && e.replySrc !== ONE_WAY_VIP
    ).map((e) => `${e.replySrc}${e.unreplied ? " [UNREPLIED]" : ""}`);
  /** Publishes, waits until applied and settled; returns [published, applied] (ms since t0). */
  const change = async (eps: string[]): Promise<[number, number]> => {
    const published = now();
    const took = await stage.publishApplied(state(eps));
    await sleep(margin + 1000);
    return [published, published + took];
  };

  await sleep(t0 + 1000 - Date.now());
  assert.deepEqual(await oneWayTarget(), [`${A.ip} [UNREPLIED]`], "the one-way flow goes to A");
  const a1 = await sinkA();
  const [del, delApplied] = await change([B.ip]);
  assert.deepEqual(await oneWayTarget(), [`${B.ip} [UNREPLIED]`], "the one-way flow moved to B");
  const b1 = await sinkB();
  const [zero, zeroApplied] = await change([]);
  assert.deepEqual(await oneWayTarget(), [], "scaled to zero: no flow points at a pod");
  assert.deepEqual(
    (await flowsTo(topo, TWO_WAY_VIP)).filter((e) => e.replySrc !== TWO_WAY_VIP),
    [],
    "scaled to zero: the two-way flow's entries are gone",
  );
  const [back, backApplied] = await change([A.ip]);
  assert.deepEqual(await oneWayTarget(), [`${A.ip} [UNREPLIED]`], "the one-way flow is back on A");
  const end = now();

  const [r, o] = await Promise.all([twoWay.stop(5000), oneWay.stop(5000)]);
  const ok = r.events.filter((e) => e.name);
  const refused = r.events.filter((e) => e.error === "errno 111");
  const names = (from: number, to: number) =>
    new Set(ok.filter((e) => e.t >= from && e.t < to).map((e) => e.name));
  const firstAfter = (t: number, name: string) =>
    (ok.find((e) => e.t >= t && e.name === name)?.t ?? Infinity) - t;
  // Each answer goes to the latest datagram sent before it that has none yet.
  const sends = r.sends ?? [];
  const answered = new Set<number>();
  for (const e of ok) {
    let k = sends.findLastIndex((t) => t <= e.t);
    while (k >= 0 && answered.has(k)) k--;
    if (k >= 0) answered.add(k);
  }
  /** Datagrams sent in [from, to) that got no answer. */
  const unanswered = (from: number, to: number) =>
    sends.filter((t, k) => t >= from && t < to && !answered.has(k)).length;
  console.log(`${mode}: UDP sender keeping its source port, 20 packets/s`);
  summary(
    mode,
    "UDP two-way sender: endpoint deleted, scaled to zero, back",
    r,
    r.sent - ok.length,
    longestGap(r.events, 0, end),
  );
  console.log(
    `    changes applied ${delApplied - del}, ${zeroApplied - zero} and ${
      backApplied - back
    } ms after they were written; first answer from B ${firstAfter(del, B.name)} ms after A ` +
      `was deleted, from A ${firstAfter(back, A.name)} ms after it came back; ICMP port ` +
      `unreachable while scaled to zero: ${refused.length}; unanswered before the deletion ` +
      `${unanswered(0, del)}, while it was applied ${unanswered(del, delApplied + margin)}, ` +
      `after ${unanswered(delApplied + margin, zero)}, after the return was applied ` +
      `${unanswered(backApplied + margin, end)}`,
  );
  summary(
    mode,
    "UDP one-way sender: endpoint deleted, scaled to zero, back",
    o,
    o.events.filter((e) => e.error).length,
    null,
  );
  console.log(`    A received ${a1} before its deletion, B ${b1} by the scale-down`);

  assert.deepEqual([...names(0, del)], [A.name]);
  assert.deepEqual([...names(delApplied + margin, zero)], [B.name], "moved to B");
  assert.ok(firstAfter(del, B.name) <= delApplied - del + margin, "B answers within one sync");
  assert.equal(names(zeroApplied + margin, back).size, 0, "no answer while scaled to zero");
  assert.ok(
    refused.some((e) => e.t > zero && e.t < back),
    "the sender is told the port is unreachable",
  );
  assert.deepEqual([...names(backApplied + margin, end)], [A.name], "traffic resumes");
  assert.ok(firstAfter(back, A.name) <= backApplied - back + margin, "within one sync");
  assert.ok(a1 > 0 && b1 > 0, "the one-way sender reached each endpoint in turn");
}
