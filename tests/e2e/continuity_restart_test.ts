/**
 * Continuity across proxy restarts, in iptables and nftables mode, with real packets: SIGTERM
 * and start with unchanged state, then kill -9 around a sync with a change made while the proxy
 * was down. TCP clients at 50 connections/s to a ClusterIP and a NodePort and a UDP stream keep
 * going; the unchanged restart deletes no UDP flow, the changed one only the stale one. Needs root.
 */
import assert from "node:assert/strict";
import { endpointSlice, list, node1, service } from "./support/cluster_objects.ts";
import {
  DNS,
  flowsTo,
  longestGap,
  MODES,
  ONE_SYNC_MS,
  RESTART_TRAFFIC_MS,
  sleep,
  summary,
  traffic,
  WEB,
  WEB_SLICE,
} from "./support/continuity.ts";
import type { TrafficReport } from "./support/continuity_traffic.ts";
import { flowService } from "./support/flow_objects.ts";
import { startProxy } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

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
      summary(
        mode,
        "restarts: TCP to a ClusterIP, 50 connections/s",
        c,
        failedTcp(c),
        longestGap(c.events),
      );
      summary(
        mode,
        "restarts: TCP to a NodePort, 50 connections/s",
        n,
        failedTcp(n),
        longestGap(n.events),
      );
      summary(
        mode,
        "restarts: UDP stream, 20 packets/s",
        u,
        u.sent - uOk.length,
        longestGap(u.events),
      );
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
