/**
 * Continuity with real packets, in iptables and nftables mode: a UDP sender that keeps its
 * source port (two-way, and one-way whose flow stays [UNREPLIED]) follows its endpoint's
 * deletion within one sync, loses its conntrack entries and is told the port is unreachable
 * when the service scales to zero, and resumes when an endpoint returns. Needs root.
 */
import assert from "node:assert/strict";
import { endpointSlice, list, node1, service } from "./support/cluster_objects.ts";
import {
  DNS,
  flowsTo,
  longestGap,
  MODES,
  ONE_SYNC_MS,
  oneWaySink,
  SINK,
  sleep,
  summary,
  traffic,
} from "./support/continuity.ts";
import { withProxy } from "./support/with_proxy.ts";

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
      summary(
        mode,
        "UDP two-way sender: endpoint deleted, scaled to zero, back",
        r,
        r.sent - ok.length,
        longestGap(r.events),
      );
      console.log(
        `    first answer from pod-b ${firstAfter(2000, "pod-b")} ms after pod-a was deleted, ` +
          `from pod-a ${firstAfter(7000, "pod-a")} ms after it came back; unanswered outside ` +
          `the scaled-to-zero window: ${unanswered}; ICMP port unreachable while scaled to zero: ` +
          `${refused.length}`,
      );
      summary(
        mode,
        "UDP one-way sender: endpoint deleted, scaled to zero, back",
        o,
        o.events.filter((e) => e.error).length,
        null,
      );
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
