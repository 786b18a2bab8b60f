/**
 * SCTP beside TCP and UDP on one service port. This kernel has no sctp module, so no SCTP
 * association can be made; instead the kernel must accept the `-m sctp -p sctp` rules (it has
 * xt_sctp), and a raw SCTP INIT packet (support/sctp_raw.ts) must be DNATed to the endpoint's
 * target port, from a pod (source kept) and from outside via the NodePort (masqueraded).
 * IP plan: node 192.168.0.2 (node1), local pods 10.0.1.2 / 10.0.2.2 / 10.0.3.2, services
 * 172.30.0.0/16, external client 203.0.113.2.
 */
import assert from "node:assert/strict";
import { type NamespaceRef, type Topology, TOPOLOGY_IPS } from "../../scripts/netns/mod.ts";
import { list, node1 } from "./support/cluster_objects.ts";
import { checkFlows } from "./support/flow_check.ts";
import { type FlowPort, flowService, flowSlice, local } from "./support/flow_objects.ts";
import type { SctpInitSeen } from "./support/sctp_raw.ts";
import { withProxy } from "./support/with_proxy.ts";

const SCTP_RAW = decodeURIComponent(new URL("./support/sctp_raw.ts", import.meta.url).pathname);
const port = (protocol: "TCP" | "UDP" | "SCTP"): FlowPort => ({
  name: protocol.toLowerCase(),
  port: 80,
  targetPort: 8080,
  protocol,
  nodePort: 30170,
});
const [TCP, UDP, SCTP] = [port("TCP"), port("UDP"), port("SCTP")];
const SCTP_NO_EPS: FlowPort = { ...SCTP, port: 81, nodePort: 0 };

const STATE = list([
  node1(),
  flowService("demo", "mixed", "172.30.0.80", [TCP, UDP, SCTP], { type: "NodePort" }),
  flowSlice("demo", "mixed", "mixed-tcp", [local("10.0.1.2")], [TCP]),
  flowSlice("demo", "mixed", "mixed-udp", [local("10.0.2.2")], [UDP]),
  flowSlice("demo", "mixed", "mixed-sctp", [local("10.0.1.2")], [SCTP]),
  flowService("demo", "empty", "172.30.0.81", [SCTP_NO_EPS]),
  flowSlice("demo", "empty", "empty-1", [], [SCTP_NO_EPS]),
]);

/** Sends one SCTP INIT from `from` to `to` and returns what a raw listener in `at` saw. */
async function sctpInit(
  topo: Topology,
  from: NamespaceRef,
  to: string,
  at: NamespaceRef,
): Promise<SctpInitSeen | { error: string }> {
  const run = ["run", "--no-config", "--allow-ffi", SCTP_RAW];
  const listener = topo.spawn(at, Deno.execPath(), [...run, "listen", "--timeout-ms", "3000"], {
    label: `sctp listener in ${at}`,
  });
  await listener.waitForOutput(/^ready$/m);
  const sent = await topo.exec(from, Deno.execPath(), [...run, "send", "--to", to]);
  assert.equal(sent.code, 0, `SCTP send from ${from} to ${to}: ${sent.stderr}`);
  await listener.waitForOutput(/^\{.*\}$/m, 5000);
  const line = listener.output().split("\n").find((l) => l.startsWith("{"))!;
  return JSON.parse(line);
}

Deno.test("e2e: TCP, UDP and SCTP on one port: the kernel takes the SCTP rules and DNATs raw SCTP INITs", async () => {
  await withProxy({
    prefix: "sx4",
    ipv6: false,
    pods: [{ name: "pod-a", ip: "10.0.1.2" }, { name: "pod-b", ip: "10.0.2.2" }, {
      name: "client",
      ip: "10.0.3.2",
    }],
    state: STATE,
    echo: { tcp: [8080], udp: [8080] },
  }, async ({ topo }) => {
    await checkFlows(topo, [
      { name: "TCP", from: "client", to: "172.30.0.80:80", expect: ["pod-a"], masq: false },
      {
        name: "UDP",
        from: "client",
        proto: "udp",
        to: "172.30.0.80:80",
        expect: ["pod-b"],
        masq: false,
      },
    ]);

    const nat = (await topo.exec("node", "iptables-legacy-save", ["-t", "nat"])).stdout;
    assert.match(
      nat,
      /-A KUBE-SERVICES -d 172\.30\.0\.80\/32 -p sctp .*-m sctp --dport 80 -j KUBE-SVC-/,
    );
    assert.match(nat, /-A KUBE-NODEPORTS -p sctp .*-m sctp --dport 30170 -j KUBE-EXT-/);
    assert.match(
      nat,
      /-A KUBE-SEP-\S+ -p sctp .*-m sctp -j DNAT --to-destination 10\.0\.1\.2:8080/,
    );
    const filter = (await topo.exec("node", "iptables-legacy-save", ["-t", "filter"])).stdout;
    assert.match(
      filter,
      /-A KUBE-SERVICES -d 172\.30\.0\.81\/32 -p sctp .*-m sctp --dport 81 -j REJECT/,
    );

    assert.deepEqual(await sctpInit(topo, "client", "172.30.0.80:80", "pod-a"), {
      src: "10.0.3.2",
      sport: 40000,
      dst: "10.0.1.2",
      dport: 8080,
    });
    const fromOutside = await sctpInit(topo, "external", `${TOPOLOGY_IPS.node}:30170`, "pod-a");
    assert.ok("dst" in fromOutside, JSON.stringify(fromOutside));
    assert.deepEqual([fromOutside.src, fromOutside.dst, fromOutside.dport], [
      TOPOLOGY_IPS.node,
      "10.0.1.2",
      8080,
    ]);
  });
});
