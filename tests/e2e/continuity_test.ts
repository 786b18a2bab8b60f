/**
 * Traffic continuity with real packets, in iptables and nftables mode: a UDP client that keeps
 * its source port follows its endpoints (deleted, scaled to zero, back) within one sync, and a
 * restart of the proxy (SIGTERM with unchanged state; kill -9 with the state changed while it
 * was down) fails no TCP connection and deletes only stale UDP flows. Each case prints its
 * counts: sent, failed, longest gap. Needs root.
 */
import assert from "node:assert/strict";
import { parseConntrackList } from "../../lib/conntrack/mod.ts";
import type { Topology } from "../../scripts/netns/mod.ts";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { flowService, type SelectionEndpoint, selectionSlice } from "./support/flow_objects.ts";
import { startProxy } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";
import type { TrafficEvent, TrafficReport } from "./support/continuity_traffic.ts";

const TRAFFIC = decodeURIComponent(
  new URL("./support/continuity_traffic.ts", import.meta.url).pathname,
);
const MODES = [
  { mode: "iptables", tag: "i", commands: [] as string[] },
  { mode: "nftables", tag: "n", commands: ["nft"] },
] as const;

const DNS: TestPort[] = [{ name: "dns", port: 53, targetPort: 8080, protocol: "UDP" }];
const SINK: TestPort[] = [{ name: "sink", port: 54, targetPort: 9999, protocol: "UDP" }];
const WEB_SLICE: TestPort[] = [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }];
const WEB = [{
  name: "http",
  port: 80,
  targetPort: 8080,
  protocol: "TCP" as const,
  nodePort: 30080,
}];
/** One sync: --iptables-min-sync-period=1s plus the manifest watch and the apply. */
const ONE_SYNC_MS = 2000;

/** How long the restart case's clients run; its steps take about 6 s. */
const RESTART_TRAFFIC_MS = 10_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts a traffic process in `from` that begins at `started`; `done()` waits for its report. */
function traffic(topo: Topology, from: string, started: number, args: string[]) {
  const proc = topo.spawn(from, Deno.execPath(), [
    "run",
    "--no-config",
    "--allow-net",
    "--allow-ffi",
    "--allow-read",
    TRAFFIC,
    "--start-at",
    String(started),
    ...args,
  ], { label: `traffic ${args.join(" ")}` });
  return {
    proc,
    async done(): Promise<TrafficReport> {
      await proc.status;
      const line = proc.output().trim().split("\n").filter((l) => l.startsWith("{")).at(-1);
      if (!line) throw new Error(`No traffic report: ${proc.output()}`);
      return JSON.parse(line) as TrafficReport;
    },
  };
}

/** The longest time without an answer between `from` and `to` (ms since the traffic began). */
function longestGap(events: readonly TrafficEvent[], from = 0, to = Infinity): number {
  let last = from, gap = 0;
  for (const e of events) {
    if (!e.name || e.t < from || e.t > to) continue;
    gap = Math.max(gap, e.t - last);
    last = e.t;
  }
  return to === Infinity ? gap : Math.max(gap, to - last);
}

function summary(what: string, r: TrafficReport, failed: number, gap: number): void {
  console.log(`  ${what}: sent ${r.sent}, failed ${failed}, longest gap ${gap} ms`);
}

/** The UDP flows to `ip` in the node's conntrack table. */
async function flowsTo(topo: Topology, ip: string) {
  const out = await topo.exec("node", "conntrack", ["-L", "-p", "udp", "--orig-dst", ip]);
  return parseConntrackList(out.stdout).entries;
}

/** Counts UDP packets arriving on `port` in a pod and drops its answers, for a one-way sender. */
async function oneWaySink(
  topo: Topology,
  pod: string,
  port: number,
): Promise<() => Promise<number>> {
  await topo.exec(pod, "iptables-legacy", ["-A", "INPUT", "-p", "udp", "--dport", String(port)]);
  await topo.exec(pod, "iptables-legacy", [
    "-A",
    "OUTPUT",
    "-p",
    "udp",
    "--sport",
    String(port),
    "-j",
    "DROP",
  ]);
  return async () => {
    const out = await topo.exec(pod, "iptables-legacy", ["-L", "INPUT", "-v", "-x", "-n"]);
    const row = out.stdout.split("\n").find((l) => l.includes(`dpt:${port}`));
    return Number(row?.trim().split(/\s+/)[0] ?? NaN);
  };
}

for (const { mode, tag, commands } of MODES) {
  Deno.test(`e2e continuity (${mode}): a UDP sender keeping its source port follows endpoint deletion, scale to zero and return`, async () => {
    const pods = [
      { name: "pod-a", ip: "10.0.1.2" },
      { name: "pod-b", ip: "10.0.2.2" },
      { name: "client", ip: "10.0.3.2" },
      { name: "client2", ip: "10.0.4.2" },
    ];
    const state = (eps: string[]) =>
      list([
        node1(),
        service("demo", "dns", "172.30.0.53", DNS),
        endpointSlice("demo", "dns", eps, DNS),
        service("demo", "sink", "172.30.0.54", SINK),
        endpointSlice("demo", "sink", eps, SINK),
      ]);
    await withProxy({
      prefix: `ct9${tag}u`,
      ipv6: false,
      pods,
      state: state(["10.0.1.2"]),
      args: [`--proxy-mode=${mode}`],
      requireCommands: ["conntrack", "iptables-legacy", ...commands],
      echo: { tcp: [8080], udp: [8080, 9999] },
    }, async ({ topo, dir }) => {
      const sinkA = await oneWaySink(topo, "pod-a", 9999);
      const sinkB = await oneWaySink(topo, "pod-b", 9999);
      const rate = ["--interval-ms", "50", "--duration-ms", "9500"];
      // Both begin once their deno has started; ICMP errors are rate-limited per client address,
      // so each sender has its own pod.
      const t0 = Date.now() + 1500;
      const twoWay = traffic(topo, "client", t0, [
        "--proto",
        "udp",
        "--to",
        "172.30.0.53:53",
        "--source-port",
        "40053",
        ...rate,
      ]);
      const oneWay = traffic(topo, "client2", t0, [
        "--proto",
        "udp",
        "--to",
        "172.30.0.54:54",
        "--source-port",
        "40054",
        ...rate,
      ]);
      const at = (ms: number) => sleep(Math.max(0, t0 + ms - Date.now()));
      const oneWayTarget = async () =>
        (await flowsTo(topo, "172.30.0.54")).filter((e) =>
          e.origSport === 40054 && e.replySrc !== "172.30.0.54"
        )
          .map((e) => `${e.replySrc}${e.unreplied ? " [UNREPLIED]" : ""}`);

      await at(1500);
      assert.deepEqual(
        await oneWayTarget(),
        ["10.0.1.2 [UNREPLIED]"],
        "the one-way flow goes to pod-a",
      );
      const a1 = await sinkA();
      await at(2000);
      await dir.write("cluster.json", state(["10.0.2.2"]));
      await at(2000 + ONE_SYNC_MS);
      assert.deepEqual(
        await oneWayTarget(),
        ["10.0.2.2 [UNREPLIED]"],
        "the one-way flow moved to pod-b",
      );
      const b1 = await sinkB();
      await at(4500);
      await dir.write("cluster.json", state([]));
      await at(4500 + ONE_SYNC_MS);
      assert.deepEqual(await oneWayTarget(), [], "scaled to zero: no flow points at a pod");
      assert.deepEqual(
        (await flowsTo(topo, "172.30.0.53")).filter((e) => e.replySrc !== "172.30.0.53"),
        [],
        "scaled to zero: the two-way flow's entries are gone",
      );
      await at(7000);
      await dir.write("cluster.json", state(["10.0.1.2"]));
      await at(7000 + ONE_SYNC_MS);
      assert.deepEqual(
        await oneWayTarget(),
        ["10.0.1.2 [UNREPLIED]"],
        "the one-way flow is back on pod-a",
      );

      const r = await twoWay.done();
      const o = await oneWay.done();
      const ok = r.events.filter((e) => e.name);
      const refused = r.events.filter((e) => e.error === "errno 111");
      const names = (from: number, to: number) =>
        new Set(ok.filter((e) => e.t >= from && e.t < to).map((e) => e.name));
      const firstAfter = (t: number, name: string) =>
        (ok.find((e) => e.t >= t && e.name === name)?.t ?? Infinity) - t;
      const inZeroWindow = (t: number) => t >= 4500 && t < 7000 + ONE_SYNC_MS;
      const ticksOutside = Array.from({ length: r.sent }, (_, k) => k * 50)
        .filter((t) => !inZeroWindow(t)).length;
      const unanswered = ticksOutside - ok.filter((e) => !inZeroWindow(e.t)).length;
      console.log(`${mode}: UDP sender keeping its source port, 20 packets/s`);
      summary("two-way", r, r.sent - ok.length, longestGap(r.events));
      console.log(
        `    first answer from pod-b ${firstAfter(2000, "pod-b")} ms after pod-a was deleted, ` +
          `from pod-a ${firstAfter(7000, "pod-a")} ms after it came back; unanswered outside ` +
          `the scaled-to-zero window: ${unanswered}; ICMP port unreachable while scaled to zero: ` +
          `${refused.length}`,
      );
      summary("one-way", o, o.events.filter((e) => e.error).length, 0);
      console.log(`    pod-a received ${a1} before its deletion, pod-b ${b1} by the scale-down`);

      assert.deepEqual([...names(0, 2000)], ["pod-a"]);
      assert.deepEqual(
        [...names(2000 + ONE_SYNC_MS, 4500)],
        ["pod-b"],
        "moved to pod-b within one sync",
      );
      assert.ok(longestGap(r.events, 2000, 4500) <= ONE_SYNC_MS, "pod-b answers within one sync");
      assert.equal(names(4500 + ONE_SYNC_MS, 7000).size, 0, "no answer while scaled to zero");
      assert.ok(
        refused.some((e) => e.t > 4500 && e.t < 7000),
        "the sender is told the port is unreachable",
      );
      assert.deepEqual(
        [...names(7000 + ONE_SYNC_MS, 9500)],
        ["pod-a"],
        "traffic resumes within one sync",
      );
      assert.ok(a1 > 0 && b1 > 0, "the one-way sender reached each endpoint in turn");
    });
  });
}

for (const { mode, tag, commands } of MODES) {
  Deno.test(`e2e continuity (${mode}): restarts (SIGTERM unchanged, kill -9 with changes made while down) fail no connection and keep UDP flows on serving endpoints`, async () => {
    const pods = [
      { name: "web-a", ip: "10.0.1.2" },
      { name: "web-b", ip: "10.0.2.2" },
      { name: "client", ip: "10.0.3.2" },
      { name: "client2", ip: "10.0.4.2" },
    ];
    const both = ["10.0.1.2", "10.0.2.2"];
    const state = (dnsEndpoints: string[], extra: unknown[] = []) =>
      list([
        node1(),
        flowService("demo", "web", "172.30.0.10", WEB, { type: "NodePort" }),
        endpointSlice("demo", "web", both, WEB_SLICE),
        service("demo", "dns", "172.30.0.53", DNS),
        endpointSlice("demo", "dns", dnsEndpoints, DNS),
        ...extra,
      ]);
    const args = [`--proxy-mode=${mode}`];
    await withProxy({
      prefix: `ct9${tag}r`,
      ipv6: false,
      pods,
      state: state(both),
      args,
      requireCommands: ["conntrack", ...commands],
      echo: { tcp: [8080], udp: [8080] },
    }, async ({ topo, dir, proxy }) => {
      const t0 = Date.now() + 1500;
      const duration = ["--duration-ms", String(RESTART_TRAFFIC_MS)];
      const clusterIP = traffic(topo, "client", t0, [
        "--proto",
        "tcp",
        "--to",
        "172.30.0.10:80",
        "--interval-ms",
        "20",
        ...duration,
      ]);
      const nodePort = traffic(topo, "external", t0, [
        "--proto",
        "tcp",
        "--to",
        "192.168.0.2:30080",
        "--interval-ms",
        "20",
        ...duration,
      ]);
      const udp = traffic(topo, "client2", t0, [
        "--proto",
        "udp",
        "--to",
        "172.30.0.53:53",
        "--source-port",
        "40053",
        "--interval-ms",
        "50",
        ...duration,
      ]);
      const now = () => Date.now() - t0;
      const restart = (label: string) =>
        startProxy(topo, [`--manifests=${dir.path}`, ...args], { flavour: "legacy", label });
      await sleep(t0 + 1000 - Date.now());

      // SIGTERM and start again with unchanged state.
      const termAt = now();
      await proxy.kill(5000);
      const second = await restart("proxy after SIGTERM");
      const secondReady = now();
      await sleep(ONE_SYNC_MS);
      const secondDeleted = /Deleted stale conntrack entries/.test(second.output());

      // A change, kill -9 while it is being synced, another change while the proxy is down.
      const pinned = (await flowsTo(topo, "172.30.0.53")).find((e) => e.origSport === 40053)
        ?.replySrc;
      assert.ok(pinned === "10.0.1.2" || pinned === "10.0.2.2", `pinned to ${pinned}`);
      const other = pinned === "10.0.1.2" ? "10.0.2.2" : "10.0.1.2";
      const extra = [
        service("demo", "new", "172.30.0.11", WEB_SLICE),
        endpointSlice("demo", "new", ["10.0.1.2"], WEB_SLICE),
      ];
      await dir.write("cluster.json", state(both, extra));
      // The manifest watch hands the change on within ~100 ms and the sync runs at once: the
      // kill lands while it is being applied or just after.
      await sleep(150);
      const killAt = now();
      Deno.kill(second.pid, "SIGKILL");
      await second.status;
      await dir.write("cluster.json", state([other], extra));
      const third = await restart("proxy after kill -9");
      const thirdReady = now();
      await sleep(ONE_SYNC_MS);
      const converged = await topo.probe({
        from: "client",
        proto: "tcp",
        to: "172.30.0.11:80",
        count: 3,
      });

      const [c, n, u] = [await clusterIP.done(), await nodePort.done(), await udp.done()];
      const uOk = u.events.filter((e) => e.name);
      const from = (a: number, b: number) =>
        new Set(uOk.filter((e) => e.t >= a && e.t < b).map((e) => e.name));
      const failedTcp = (r: TrafficReport) => r.events.filter((e) => e.error).length;
      console.log(
        `${mode}: SIGTERM at ${termAt} ms, ready again at ${secondReady} ms; kill -9 at ${killAt} ms, ready again at ${thirdReady} ms`,
      );
      summary("TCP to the ClusterIP, 50 connections/s", c, failedTcp(c), longestGap(c.events));
      summary("TCP to the NodePort, 50 connections/s", n, failedTcp(n), longestGap(n.events));
      summary("UDP stream, 20 packets/s", u, u.sent - uOk.length, longestGap(u.events));
      console.log(
        `    UDP entries deleted by the restart with unchanged state: ${
          secondDeleted ? "some" : 0
        }`,
      );
      console.log(
        `    UDP answered by ${[...from(0, killAt)].join(",")} before kill -9, by ${
          [...from(thirdReady + ONE_SYNC_MS, RESTART_TRAFFIC_MS)].join(",")
        } after`,
      );

      assert.equal(failedTcp(c), 0, "no failed connection through the ClusterIP");
      assert.equal(failedTcp(n), 0, "no failed connection through the NodePort");
      assert.equal(secondDeleted, false, "an unchanged restart deletes no conntrack entry");
      const pinnedName = pinned === "10.0.1.2" ? "web-a" : "web-b";
      assert.deepEqual(
        [...from(0, killAt)],
        [pinnedName],
        "UDP answers keep coming from one endpoint",
      );
      assert.deepEqual([...from(thirdReady + ONE_SYNC_MS, RESTART_TRAFFIC_MS)], [
        pinnedName === "web-a" ? "web-b" : "web-a",
      ]);
      assert.match(third.output(), /Deleted stale conntrack entries/);
      assert.ok(
        converged.every((a) => a.ok && a.name === "web-a"),
        "rules converged after kill -9",
      );
    });
  });
}

for (const { mode, tag, commands } of MODES) {
  Deno.test(`e2e continuity (${mode}): a rolling update of a 3-endpoint service fails no connection through its ClusterIP`, async () => {
    const old = ["10.0.1.2", "10.0.2.2", "10.0.3.2"], fresh = ["10.0.4.2", "10.0.5.2", "10.0.6.2"];
    const pods = [...old, ...fresh].map((ip, i) => ({ name: `r${i}`, ip }));
    const state = (endpoints: SelectionEndpoint[]) =>
      list([
        node1(),
        service("demo", "web", "172.30.0.10", WEB_SLICE),
        selectionSlice("demo", "web", "web-slice", "IPv4", endpoints, WEB_SLICE),
      ]);
    const ready = (ip: string): SelectionEndpoint => ({ ip, nodeName: "node1" });
    const terminating = (ip: string): SelectionEndpoint => ({
      ip,
      nodeName: "node1",
      ready: false,
      serving: true,
      terminating: true,
    });
    await withProxy({
      prefix: `ct9${tag}w`,
      ipv6: false,
      pods: [...pods, { name: "client", ip: "10.0.7.2" }],
      state: state(old.map(ready)),
      args: [`--proxy-mode=${mode}`],
      requireCommands: commands,
      echo: false,
    }, async ({ topo, dir }) => {
      const echo = await Promise.all(
        pods.map((p) => topo.startEchoServer(p.name, { tcp: [8080], udp: [8080] })),
      );
      const t0 = Date.now() + 1500;
      const client = traffic(topo, "client", t0, [
        "--proto",
        "tcp",
        "--to",
        "172.30.0.10:80",
        "--interval-ms",
        "20",
        "--duration-ms",
        "8000",
      ]);
      await sleep(t0 + 500 - Date.now());
      // One pod at a time: the new one is ready and the old one terminating (still serving its
      // open connections), then the old one is removed and its server stopped.
      for (let i = 0; i < 3; i++) {
        const eps = [
          ...fresh.slice(0, i + 1).map(ready),
          terminating(old[i]!),
          ...old.slice(i + 1).map(ready),
        ];
        await dir.write("cluster.json", state(eps));
        await sleep(1200);
        await dir.write("cluster.json", state(eps.filter((e) => e.ip !== old[i])));
        await sleep(1000);
        await echo[i]!.kill(500);
      }
      const r = await client.done();
      const failed = r.events.filter((e) => e.error);
      const names = new Set(r.events.filter((e) => e.t > 7000).map((e) => e.name));
      console.log(`${mode}: rolling update of 3 endpoints, 50 connections/s to the ClusterIP`);
      summary("TCP", r, failed.length, longestGap(r.events));
      assert.equal(failed.length, 0, JSON.stringify(failed.slice(0, 5)));
      assert.deepEqual(
        [...names].sort(),
        ["r3", "r4", "r5"],
        "only the new pods answer at the end",
      );
    });
  });
}
