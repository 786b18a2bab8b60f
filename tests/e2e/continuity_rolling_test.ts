/**
 * Continuity through a rolling update, in iptables and nftables mode, with real packets: each
 * old endpoint turns terminating as its replacement becomes ready, then goes; a client at 50
 * connections/s through the ClusterIP sees no failure. Needs root.
 */
import assert from "node:assert/strict";
import { list, node1, service } from "./support/cluster_objects.ts";
import { longestGap, MODES, sleep, summary, traffic, WEB_SLICE } from "./support/continuity.ts";
import { type SelectionEndpoint, selectionSlice } from "./support/flow_objects.ts";
import { withProxy } from "./support/with_proxy.ts";

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
      summary(
        mode,
        "rolling update: TCP to a ClusterIP, 50 connections/s",
        r,
        failed.length,
        longestGap(r.events),
      );
      assert.equal(failed.length, 0, JSON.stringify(failed.slice(0, 5)));
      assert.deepEqual(
        [...names].sort(),
        ["r3", "r4", "r5"],
        "only the new pods answer at the end",
      );
    });
  });
}
