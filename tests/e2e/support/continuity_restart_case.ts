/**
 * The restart continuity case, in any mode: SIGTERM and start with unchanged state, then kill -9
 * around a sync with a change made while the proxy was down. TCP clients (50 connections/s
 * each on a host) to a ClusterIP and a NodePort and a UDP stream keep going; the unchanged restart deletes no UDP
 * flow, the changed one leaves no flow on the endpoint that went. In IPVS mode the flows live in
 * IPVS's connection table too: a restart leaves the virtual servers and their connections in
 * place, and the flow to the UDP real server deleted after kill -9 is expired by IPVS itself on
 * its next packet (expire_nodest_conn=1, conntrack entry included with net.ipv4.vs.conntrack=1),
 * which may come before the reconciler lists the table: there the reconciler may find nothing
 * left to delete, and what is asserted is that no flow points at the deleted endpoint.
 */
import assert from "node:assert/strict";
import { endpointSlice, service } from "./cluster_objects.ts";
import {
  assertFewUnsent,
  DNS,
  flowsTo,
  longestGap,
  sleep,
  summary,
  WEB,
  WEB_SLICE,
} from "./continuity.ts";
import type { TrafficReport } from "./continuity_traffic.ts";
import type { ContinuityStage } from "./continuity_stage.ts";
import type { SpawnedProcess } from "../../../scripts/netns/mod.ts";
import { flowService } from "./flow_objects.ts";

const WEB_VIP = "172.30.0.10", NEW_VIP = "172.30.0.11", DNS_VIP = "172.30.0.63";
const A = { name: "p1", ip: "10.0.1.2" }, B = { name: "p2", ip: "10.0.2.2" };
const DELETED = /Deleted stale conntrack entries/;
/** The start-up lines printed for a restart: when it loaded, chose its mode and first synced. */
const STARTUP = [/"Loaded manifests"/, /"Using \w+ proxy"/, /"SyncProxyRules complete"/];

/** The restarts under traffic; the stage's proxy is replaced by the one started last. */
export async function restartCase(stage: ContinuityStage): Promise<void> {
  const { mode, topo } = stage;
  const settle = stage.settleMs + 1000;
  const perSecond = Math.round(1000 / stage.tcpIntervalMs);
  const both = [A.ip, B.ip];
  const state = (dnsEndpoints: string[], extra: unknown[] = []) => [
    flowService("demo", "web", WEB_VIP, WEB, { type: "NodePort" }),
    endpointSlice("demo", "web", both, WEB_SLICE),
    service("demo", "dns", DNS_VIP, DNS),
    endpointSlice("demo", "dns", dnsEndpoints, DNS),
    ...extra,
  ];
  await stage.startServers([A.name, B.name]);
  await stage.publishApplied(state(both));
  const t0 = stage.startAt();
  // Sending ends when the steps are done (stop()); the duration is only an upper bound.
  const tcp = ["--interval-ms", String(stage.tcpIntervalMs), "--duration-ms", "600000"];
  const timeout = ["--timeout-ms", String(stage.tcpTimeoutMs)];
  const clusterIP = stage.traffic("client", t0, [
    "--proto",
    "tcp",
    "--to",
    `${WEB_VIP}:80`,
    ...tcp,
    ...timeout,
  ]);
  const nodePort = stage.traffic("external", t0, [
    "--proto",
    "tcp",
    "--to",
    "192.168.0.2:30080",
    ...tcp,
    ...timeout,
  ]);
  const udp = stage.traffic("client2", t0, [
    "--proto",
    "udp",
    "--to",
    `${DNS_VIP}:53`,
    "--source-port",
    "40053",
    "--interval-ms",
    "50",
    "--duration-ms",
    "600000",
  ]);
  const now = () => Date.now() - t0;
  await sleep(t0 + 1000 - Date.now());

  // SIGTERM and start again with unchanged state.
  const termAt = now();
  await stage.running.kill(5000);
  const exitedAt = now();
  const second = await stage.startProxy("proxy after SIGTERM");
  const secondReady = now();
  await sleep(settle);
  const secondDeleted = DELETED.test(second.output());

  // A change, kill -9 while it is being synced, another change while the proxy is down.
  const pinned = (await flowsTo(topo, DNS_VIP)).find((e) => e.origSport === 40053)?.replySrc;
  assert.ok(pinned === A.ip || pinned === B.ip, `pinned to ${pinned}`);
  const [pinnedName, other] = pinned === A.ip ? [A.name, B] : [B.name, A];
  const extra = [
    service("demo", "new", NEW_VIP, WEB_SLICE),
    endpointSlice("demo", "new", [A.ip], WEB_SLICE),
  ];
  await stage.publish(state(both, extra));
  // The manifest watch hands the change on within ~100 ms and the sync runs at once: the kill
  // lands while it is being applied or just after.
  await sleep(150);
  const killAt = now();
  Deno.kill(second.pid, "SIGKILL");
  await second.status;
  await stage.publish(state([other.ip], extra));
  const third = await stage.startProxy("proxy after kill -9");
  const thirdReady = now();
  await sleep(settle);
  const leftOnGone = (await flowsTo(topo, DNS_VIP)).filter((e) => e.replySrc === pinned);
  const converged = await topo.probe({
    from: "client",
    proto: "tcp",
    to: `${NEW_VIP}:80`,
    count: 3,
    timeoutMs: stage.tcpTimeoutMs,
  });
  await sleep(1000);
  const end = now();

  const grace = stage.tcpTimeoutMs + 15_000;
  const [c, n, u] = await Promise.all([
    clusterIP.stop(grace),
    nodePort.stop(grace),
    udp.stop(grace),
  ]);
  const uOk = u.events.filter((e) => e.name);
  const from = (a: number, b: number) =>
    new Set(uOk.filter((e) => e.t >= a && e.t < b).map((e) => e.name));
  const failedTcp = (r: TrafficReport) => r.events.filter((e) => e.error).length;
  console.log(
    `${mode}: SIGTERM at ${termAt} ms, exited at ${exitedAt} ms, ready again at ${secondReady} ms; ` +
      `kill -9 at ${killAt} ms, ready again at ${thirdReady} ms`,
  );
  summary(
    mode,
    `restarts: TCP to a ClusterIP, ${perSecond} connections/s`,
    c,
    failedTcp(c),
    longestGap(c.events),
  );
  summary(
    mode,
    `restarts: TCP to a NodePort, ${perSecond} connections/s`,
    n,
    failedTcp(n),
    longestGap(n.events),
  );
  summary(mode, "restarts: UDP stream, 20 packets/s", u, u.sent - uOk.length, longestGap(u.events));
  console.log(
    `    UDP entries deleted by the restart with unchanged state: ${secondDeleted ? "some" : 0}; ` +
      `after kill -9 the reconciler deleted ${DELETED.test(third.output()) ? "some" : "none"}, ` +
      `flows left on the endpoint that went: ${leftOnGone.length}`,
  );
  /** The first line of each start-up step. */
  const startLines = (p: SpawnedProcess) => {
    const lines = p.output().split("\n");
    return STARTUP.map((re) => lines.find((l) => re.test(l)) ?? `(no ${re.source})`)
      .map((l) => `      ${l}`).join("\n");
  };
  console.log(
    `    after SIGTERM:\n${startLines(second)}\n    after kill -9:\n${startLines(third)}`,
  );
  console.log(
    `    UDP answered by ${[...from(0, killAt)].join(",")} before kill -9, by ${
      [...from(thirdReady + stage.settleMs, end)].join(",")
    } after`,
  );

  assert.equal(failedTcp(c), 0, "no failed connection through the ClusterIP");
  assert.equal(failedTcp(n), 0, "no failed connection through the NodePort");
  assertFewUnsent(c, "ClusterIP client");
  assertFewUnsent(n, "NodePort client");
  assert.equal(secondDeleted, false, "an unchanged restart deletes no conntrack entry");
  assert.deepEqual([...from(0, killAt)], [pinnedName], "UDP answers keep coming from one endpoint");
  assert.deepEqual([...from(thirdReady + stage.settleMs, end)], [other.name]);
  assert.deepEqual(leftOnGone, [], "no UDP flow is left on the endpoint that went");
  // In the rule-based modes only the reconciler can remove the stale flow.
  if (mode !== "ipvs") assert.match(third.output(), DELETED);
  assert.ok(converged.every((a) => a.ok && a.name === A.name), "rules converged after kill -9");
}
