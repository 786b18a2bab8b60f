/**
 * The rolling-update continuity case, in any mode: each old endpoint of a 3-endpoint service
 * turns terminating (serving) as its replacement becomes ready, then goes and its server stops.
 * A client through the ClusterIP sees no failure; an ETP=Local NodePort whose only local
 * endpoint is the terminating one (a ready endpoint is on node2) keeps reaching it, as upstream
 * 1.28+ serves terminating local endpoints before none; a TCP connection held to a terminating
 * endpoint keeps carrying data until the endpoint is removed. IPVS mode reaches the same by
 * graceful termination: a terminating or removed TCP real server stays at weight 0 while it
 * has connections, so new connections avoid it and held ones keep their path. With `reuse`, a
 * second service over the same pods gets a client that cycles through a small pool of source
 * ports, so each port comes back while the kernel still holds its last connection (IPVS mode's
 * conn_reuse_mode case).
 */
import assert from "node:assert/strict";
import { HeldConnection } from "../../ipvs_guest/support/held_connection.ts";
import { assertFewUnsent, longestGap, sleep, summary, type Traffic } from "./continuity.ts";
import { type ContinuityStage, HOLD_PORT, REMOTE_POD } from "./continuity_stage.ts";
import type { TrafficReport } from "./continuity_traffic.ts";
import {
  type FlowPort,
  flowService,
  type SelectionEndpoint,
  selectionSlice,
} from "./flow_objects.ts";

const WEB_PORTS: FlowPort[] = [
  { name: "http", port: 80, targetPort: 8080 },
  { name: "hold", port: 90, targetPort: HOLD_PORT },
];
const EDGE_PORTS: FlowPort[] = [{ name: "http", port: 80, targetPort: 8080, nodePort: 30081 }];
const EDGE_VIP = "172.30.0.21";

/** A pod as the case rolls it. */
export interface RollingPod {
  readonly name: string;
  readonly ip: string;
}

/** A client that reuses source ports, to a second service over the same pods. */
export interface ReuseClient {
  readonly vip: string;
  /** Milliseconds between its connections (the rate asked for). */
  readonly intervalMs: number;
  /** `FIRST-LAST`: the source ports it cycles through (continuity_traffic.ts). */
  readonly sourcePorts: string;
  /** Called halfway through; what it returns is printed. */
  readonly observe?: () => Promise<string>;
}

/** What one rolling update does and measures. */
export interface RollingOptions {
  readonly vip: string;
  /** The serving pods, replaced one at a time by `fresh` (whose servers run). */
  readonly old: readonly [RollingPod, RollingPod, RollingPod];
  readonly fresh: readonly [RollingPod, RollingPod, RollingPod];
  /** Milliseconds between the ClusterIP client's connections. */
  readonly intervalMs: number;
  readonly reuse?: ReuseClient;
}

const ready = (ip: string, nodeName: "node1" | "node2" = "node1"): SelectionEndpoint => ({
  ip,
  nodeName,
});
const terminating = (ip: string): SelectionEndpoint => ({
  ip,
  nodeName: "node1",
  ready: false,
  serving: true,
  terminating: true,
});

/** The clients' reports and what the steps saw. */
interface RollingRun {
  readonly cluster: TrafficReport;
  readonly nodePort: TrafficReport;
  readonly reuse: TrafficReport | null;
  readonly heldPod: string;
  readonly heldReplies: readonly string[];
  /** When old[0] was the NodePort's applied terminating local endpoint (ms since t0). */
  readonly edgeTerminating: readonly [number, number];
  readonly lastRemoval: number;
}

/** The rolling update: every client and step, every count printed, then the assertions. */
export async function rollingCase(stage: ContinuityStage, opts: RollingOptions): Promise<void> {
  const run = await rollOut(stage, opts);
  const { mode } = stage;
  const margin = stage.settleMs;
  const nodePortPerSecond = Math.round(1000 / Math.round(opts.intervalMs * 2.5));
  const failures = (r: TrafficReport) => r.events.filter((x) => x.error);
  const answeredAtEnd = (r: TrafficReport) =>
    [...new Set(r.events.filter((x) => x.t > run.lastRemoval + margin).map((x) => x.name))]
      .sort();
  const [from, to] = run.edgeTerminating;
  const duringTerminating = new Set(
    run.nodePort.events.filter((x) => x.t >= from && x.t < to).map((x) => x.name ?? x.error),
  );
  const perSecond = Math.round(1000 / opts.intervalMs);
  console.log(
    `${mode}: rolling update of 3 endpoints, ${perSecond} connections/s to the ClusterIP`,
  );
  summary(
    mode,
    `rolling update: TCP to a ClusterIP, ${perSecond} connections/s`,
    run.cluster,
    failures(run.cluster).length,
    longestGap(run.cluster.events),
  );
  summary(
    mode,
    `rolling update: TCP to an ETP=Local NodePort whose only local endpoint is terminating, ${nodePortPerSecond} connections/s`,
    run.nodePort,
    failures(run.nodePort).length,
    longestGap(run.nodePort.events),
  );
  console.log(
    `    the NodePort answered from ${[...duringTerminating].join(",")} while ${
      opts.old[0].name
    } was its terminating local endpoint; held connection: ${run.heldReplies.join(" | ")}`,
  );
  if (opts.reuse && run.reuse) {
    const asked = Math.round(1000 / opts.reuse.intervalMs);
    summary(
      mode,
      `rolling update: TCP to a ClusterIP from ${portCount(opts.reuse.sourcePorts)} reused ` +
        `source ports, ${asked} connections/s asked`,
      run.reuse,
      failures(run.reuse).length,
      longestGap(run.reuse.events),
    );
  }

  const fresh = opts.fresh.map((p) => p.name).sort();
  for (const r of [run.cluster, ...(run.reuse ? [run.reuse] : [])]) {
    assert.deepEqual(failures(r), [], "no failed connection through the ClusterIP");
    assertFewUnsent(r, "ClusterIP client");
    assert.deepEqual(answeredAtEnd(r), fresh, "only the new pods answer at the end");
  }
  assert.deepEqual(failures(run.nodePort), [], "no failed connection through the NodePort");
  assertFewUnsent(run.nodePort, "NodePort client");
  assert.deepEqual(
    [...duringTerminating],
    [opts.old[0].name],
    "the terminating local endpoint serves",
  );
  assert.ok(
    !run.nodePort.events.some((x) => x.name === REMOTE_POD.name),
    "the ETP=Local NodePort never leaves the node",
  );
  assert.deepEqual(
    run.heldReplies,
    [`${run.heldPod} while-terminating`, `${run.heldPod} before-removal`],
    "the held connection carries data while its endpoint is terminating",
  );
}

/** How many ports `FIRST-LAST` names. */
function portCount(range: string): number {
  const [first, last] = range.split("-").map(Number) as [number, number];
  return last - first + 1;
}

/** Runs the clients and the steps; returns what they saw. */
async function rollOut(stage: ContinuityStage, opts: RollingOptions): Promise<RollingRun> {
  const { topo } = stage;
  const margin = stage.settleMs;
  const { old, fresh, reuse } = opts;
  // The NodePort's client runs at 2/5 of the ClusterIP's rate (20/s beside 50/s on a host).
  const nodePortIntervalMs = Math.round(opts.intervalMs * 2.5);
  const web = (eps: SelectionEndpoint[]) => [
    flowService("demo", "web", opts.vip, WEB_PORTS),
    selectionSlice("demo", "web", "web-slice", "IPv4", eps, WEB_PORTS),
    ...(reuse
      ? [
        flowService("demo", "reuse", reuse.vip, WEB_PORTS),
        selectionSlice("demo", "reuse", "reuse-slice", "IPv4", eps, WEB_PORTS),
      ]
      : []),
  ];
  // The NodePort's local endpoint is old[0], replaced by fresh[0] only once old[0] is gone.
  const edge = (local: SelectionEndpoint) => [
    flowService("demo", "edge", EDGE_VIP, EDGE_PORTS, {
      type: "NodePort",
      externalTrafficPolicy: "Local",
    }),
    selectionSlice("demo", "edge", "edge-slice", "IPv4", [
      local,
      ready(REMOTE_POD.ip, "node2"),
    ], EDGE_PORTS),
  ];
  await stage.startServers([...old, ...fresh, REMOTE_POD].map((p) => p.name));
  await stage.publishApplied([...web(old.map((p) => ready(p.ip))), ...edge(ready(old[0].ip))]);
  // Connected while the clients' deno processes start.
  const heldOpen = HeldConnection.open(topo, "client2", `${opts.vip}:90`);
  const t0 = stage.startAt();
  const tcp = (to: string, intervalMs: number, more: string[] = []) => [
    "--proto",
    "tcp",
    "--to",
    to,
    "--interval-ms",
    String(intervalMs),
    "--duration-ms",
    "600000",
    "--timeout-ms",
    String(stage.tcpTimeoutMs),
    ...more,
  ];
  const clients: Traffic[] = [
    stage.traffic("client", t0, tcp(`${opts.vip}:80`, opts.intervalMs)),
    stage.traffic("external", t0, tcp("192.168.0.2:30081", nodePortIntervalMs)),
    ...(reuse
      ? [
        stage.traffic(
          "client2",
          t0,
          tcp(`${reuse.vip}:80`, reuse.intervalMs, ["--source-ports", reuse.sourcePorts]),
        ),
      ]
      : []),
  ];
  let held: HeldConnection | null = null;
  const now = () => Date.now() - t0;
  const heldReplies: string[] = [];
  let heldPod = "", edgeTerminating: [number, number] = [0, 0], lastRemoval = 0;
  try {
    [held, heldPod] = await heldOpen;
    await sleep(t0 + 500 - Date.now());
    // One pod at a time: the new one is ready and the old one terminating (still serving its
    // open connections) for a second after the proxy applied it, then the old one is removed
    // and, once the proxy applied that, its server stopped.
    for (let i = 0; i < 3; i++) {
      const goes = old[i]!;
      const eps = [
        ...fresh.slice(0, i + 1).map((p) => ready(p.ip)),
        terminating(goes.ip),
        ...old.slice(i + 1).map((p) => ready(p.ip)),
      ];
      const local = i === 0 ? terminating(old[0].ip) : ready(fresh[0].ip);
      const terminatingAt = now();
      const took = await stage.publishApplied([...web(eps), ...edge(local)]);
      await sleep(margin);
      const holds = held !== null && heldPod === goes.name;
      if (holds) heldReplies.push(await held!.send("while-terminating"));
      if (i === 1 && reuse?.observe) console.log(`    ${await reuse.observe()}`);
      await sleep(1000);
      if (holds) heldReplies.push(await held!.send("before-removal"));
      if (i === 0) edgeTerminating = [terminatingAt + took + margin, now()];
      await stage.publishApplied([
        ...web(eps.filter((e) => e.ip !== goes.ip)),
        ...edge(ready(fresh[0].ip)),
      ]);
      lastRemoval = now();
      await sleep(margin);
      if (holds) {
        await held!.close();
        held = null;
      }
      await stage.stopServer(goes.name);
    }
    await sleep(1000);
  } finally {
    await held?.close();
  }
  const grace = stage.tcpTimeoutMs + 15_000;
  const [cluster, nodePort, reused] = await Promise.all(clients.map((c) => c.stop(grace)));
  return {
    cluster: cluster!,
    nodePort: nodePort!,
    reuse: reused ?? null,
    heldPod,
    heldReplies,
    edgeTerminating,
    lastRemoval,
  };
}
