/**
 * Graceful termination in a real IPVS kernel, with a TCP connection held open through a
 * ClusterIP (REFERENCE_MODES §4; upstream's graceful_termination.go): a removed TCP real server
 * stays at weight 0 while its connection lives and still carries data both ways, new
 * connections avoid it, a removed UDP real server goes at once, one that returns while
 * draining gets weight 1 back, and once the held connection is gone the next check deletes it.
 * The proxy must run with KUBE_PROXY_IPVS_DRAIN_CHECK_INTERVAL=DRAIN_CHECK (the test seam).
 */
import assert from "node:assert/strict";
import { scaledMs, type Topology } from "../../../scripts/netns/mod.ts";
import { flowService, flowSlice, local } from "../../e2e/support/flow_objects.ts";
import { eventually } from "../../e2e/support/proxy_process.ts";
import type { ClusterState } from "./cluster_state.ts";
import { HeldConnection } from "./held_connection.ts";
import { realServers, weights } from "./ipvs_node.ts";
import { HOLD_PORT } from "./line_echo.ts";

/** The drain-check interval the proxy runs with in this test (upstream: 1 minute). */
export const DRAIN_CHECK = "1s";
const DRAIN_CHECK_MS = 1_000;
/** Per attempt, as the flow tables allow: the emulated guest answers slowly under load. */
const PROBE_TIMEOUT_MS = 2_000;
/** The port the line echo servers (which keep connections open) listen on in pod-a and pod-b. */
export { HOLD_PORT };

const VIP = "172.30.0.50";
const POD_A = "10.0.1.2", POD_B = "10.0.2.2";
const TCP_VS = `${VIP}:80/TCP`, UDP_VS = `${VIP}:53/UDP`;
const PORTS = [
  { name: "held", port: 80, targetPort: HOLD_PORT },
  { name: "dns", port: 53, targetPort: 8080, protocol: "UDP" as const },
];

/** The service and its slice with these endpoints. */
function drainService(ips: readonly string[]): unknown[] {
  return [
    flowService("demo", "drain", VIP, PORTS),
    flowSlice("demo", "drain", "drain-1", ips.map(local), PORTS),
  ];
}

/** Publishes the endpoints, then waits until IPVS holds exactly `tcp` and `udp`. */
async function step(
  topo: Topology,
  cluster: ClusterState,
  ips: readonly string[],
  want: { tcp: string[]; udp: string[] },
): Promise<void> {
  cluster.set("drain", drainService(ips));
  await cluster.publish();
  let seen = "";
  try {
    await eventually(`IPVS follows endpoints ${ips.join(",")}`, scaledMs(20_000), async () => {
      const tcp = weights(await realServers(topo, TCP_VS));
      const udp = weights(await realServers(topo, UDP_VS));
      seen = JSON.stringify({ tcp, udp });
      return seen === JSON.stringify({ tcp: want.tcp.sort(), udp: want.udp.sort() });
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; wanted ${JSON.stringify(want)}, saw ${seen}`);
  }
}

/** Opens connections until one reached each of pod-a and pod-b; closes any extra. */
async function holdOnePerPod(topo: Topology): Promise<Map<string, HeldConnection>> {
  const held = new Map<string, HeldConnection>();
  const keep = async ([conn, pod]: [HeldConnection, string]) => {
    if (held.has(pod)) await conn.close();
    else held.set(pod, conn);
  };
  try {
    // Two at once (rr alternates even so); more one by one if both met the same pod.
    const first = await Promise.allSettled(
      [0, 1].map(() => HeldConnection.open(topo, "client", `${VIP}:80`)),
    );
    for (const r of first) if (r.status === "fulfilled") await keep(r.value);
    for (const r of first) if (r.status === "rejected") throw r.reason;
    for (let i = 0; i < 4 && held.size < 2; i++) {
      await keep(await HeldConnection.open(topo, "client", `${VIP}:80`));
    }
  } catch (err) {
    for (const c of held.values()) await c.close();
    throw err;
  }
  assert.deepEqual([...held.keys()].sort(), ["pod-a", "pod-b"], "rr spread the held connections");
  return held;
}

/** The whole graceful-termination story on the service `drain` (VIP 172.30.0.50). */
export async function gracefulTermination(topo: Topology, cluster: ClusterState): Promise<void> {
  const a = `${POD_A}:${HOLD_PORT}`, b = `${POD_B}:${HOLD_PORT}`;
  const ua = `${POD_A}:8080`, ub = `${POD_B}:8080`;
  await step(topo, cluster, [POD_A, POD_B], {
    tcp: [`${a} w1`, `${b} w1`],
    udp: [`${ua} w1`, `${ub} w1`],
  });
  const held = await holdOnePerPod(topo);
  const connA = held.get("pod-a")!, connB = held.get("pod-b")!;
  try {
    // B leaves while its connection is open: TCP drains at weight 0, UDP goes at once.
    await step(topo, cluster, [POD_A], { tcp: [`${a} w1`, `${b} w0`], udp: [`${ua} w1`] });
    // B returns while draining: weight 1 again (upstream deletes and re-adds it).
    await step(topo, cluster, [POD_A, POD_B], {
      tcp: [`${a} w1`, `${b} w1`],
      udp: [`${ua} w1`, `${ub} w1`],
    });

    // A leaves while its connection is open.
    await step(topo, cluster, [POD_B], { tcp: [`${a} w0`, `${b} w1`], udp: [`${ub} w1`] });
    // Two drain checks later A is still there, at weight 0, holding its connection...
    await new Promise((r) => setTimeout(r, 2 * DRAIN_CHECK_MS + 500));
    const draining = (await realServers(topo, TCP_VS))?.get(a);
    assert.equal(draining?.weight, 0, `A after 2 drain checks: ${JSON.stringify(draining)}`);
    assert.equal(draining?.activeConns, 1, `A's held connection: ${JSON.stringify(draining)}`);
    // ...which still carries data both ways.
    assert.equal(await connA.send("ping-1"), "pod-a ping-1");
    assert.equal(await connA.send("ping-2"), "pod-a ping-2");
    // New connections go to B only, TCP and UDP.
    const probe = { from: "client", count: 6, timeoutMs: PROBE_TIMEOUT_MS } as const;
    const tcp = await topo.probe({ ...probe, proto: "tcp", to: `${VIP}:80` });
    assert.deepEqual(tcp.map((x) => x.ok ? x.name : x.error), Array(6).fill("pod-b"));
    const udp = await topo.probe({ ...probe, proto: "udp", to: `${VIP}:53` });
    assert.deepEqual(udp.map((x) => x.ok ? x.name : x.error), Array(6).fill("pod-b"));

    // The held connection ends (RST: IPVS keeps it 10 s in CLOSE); the next check deletes A.
    await connA.reset();
    const waited = await eventually(
      "the drained real server A is deleted",
      scaledMs(40_000),
      async () => {
        const reals = await realServers(topo, TCP_VS);
        return reals !== null && !reals.has(a) && reals.get(b)?.weight === 1;
      },
    );
    console.log(`Drained real server deleted ${waited} ms after its last connection was reset`);
  } finally {
    await connA.close();
    await connB.close();
  }
}
