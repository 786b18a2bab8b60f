/**
 * Real-kernel tests of the netns test harness itself (scripts/netns). They need root and
 * iproute2 + iptables-legacy, and fail loudly (never skip) when either is missing.
 * IP plan: pods 10.0.0.0/8, service IPs 172.30.0.0/16, node 192.168.0.2, external 203.0.113.2.
 */
import assert from "node:assert/strict";
import {
  createTopology,
  listNamespaces,
  planTopology,
  type ProbeAnswer,
  requireCommands,
  requireNetnsSupport,
  type Topology,
  type TopologyOptions,
} from "../../scripts/netns/mod.ts";

const PODS: TopologyOptions["pods"] = [
  { name: "pod-a", ip: "10.0.1.2" },
  { name: "pod-b", ip: "10.0.2.2" },
];

async function preflight(): Promise<void> {
  await requireNetnsSupport();
  requireCommands(["ip", "sysctl", "iptables-legacy", "ip6tables-legacy"]);
}

/** Builds a topology with echo servers, runs `body`, prints process logs on failure, destroys. */
async function withTopology(
  opts: TopologyOptions,
  body: (topo: Topology) => Promise<void>,
): Promise<void> {
  await preflight();
  const topo = await createTopology(opts);
  try {
    await topo.startEchoServers();
    await body(topo);
  } catch (err) {
    console.error(topo.logs());
    throw err;
  } finally {
    await topo.destroy();
  }
}

async function mustExec(topo: Topology, ns: string, cmd: string, args: string[]): Promise<void> {
  const out = await topo.exec(ns, cmd, args);
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")} in ${ns} failed: ${out.stderr}`);
}

function names(answers: ProbeAnswer[]): string[] {
  return answers.map((a) => a.ok ? a.name : `error:${a.error}`);
}

function peerIPs(answers: ProbeAnswer[]): string[] {
  return answers.map((a) => a.ok ? a.peer.replace(/:\d+$/, "") : `error:${a.error}`);
}

Deno.test("planTopology() rejects bad prefixes, reserved names and duplicate addresses", () => {
  assert.throws(() => planTopology({ prefix: "Bad-1" }), /Invalid topology prefix "Bad-1"/);
  assert.throws(
    () => planTopology({ prefix: "t", pods: [{ name: "node", ip: "10.0.1.2" }] }),
    /Invalid pod name "node"/,
  );
  assert.throws(
    () => planTopology({ prefix: "t", pods: [{ name: "a", ip: "192.168.1.2" }] }),
    /Invalid IP "192.168.1.2"/,
  );
  assert.throws(
    () =>
      planTopology({
        prefix: "t",
        pods: [{ name: "a", ip: "10.0.1.2" }],
        remotePods: [{ name: "b", ip: "10.0.1.2" }],
      }),
    /Duplicate pod IP "10.0.1.2"/,
  );
  const plan = planTopology({
    prefix: "t",
    pods: PODS,
    remotePods: [{ name: "r", ip: "10.1.1.2" }],
  });
  assert.deepEqual(
    plan.pods.map((p) => [p.name, p.ns, p.host, p.hostIface, p.ip6]),
    [
      ["pod-a", "t-pod-a", "node", "veth0", "fd00:10::1:2"],
      ["pod-b", "t-pod-b", "node", "veth1", "fd00:10::2:2"],
      ["r", "t-r", "node2", "veth0", "fd00:10::1:1:2"],
    ],
  );
});

Deno.test("createTopology() routes pod to pod TCP and UDP through the node, unmasqueraded", async () => {
  await withTopology({ prefix: "kpt1", pods: PODS }, async (topo) => {
    const started = Date.now();
    const tcp = await topo.probe({ from: "pod-a", proto: "tcp", to: "10.0.2.2:80", count: 20 });
    const elapsed = Date.now() - started;
    assert.deepEqual(names(tcp), Array(20).fill("pod-b"));
    assert.deepEqual(peerIPs(tcp), Array(20).fill("10.0.1.2"));
    assert.ok(elapsed < 1000, `20 TCP probes took ${elapsed} ms`);

    const udp = await topo.probe({ from: "pod-b", proto: "udp", to: "10.0.1.2:53", count: 3 });
    assert.deepEqual(names(udp), ["pod-a", "pod-a", "pod-a"]);
    assert.deepEqual(peerIPs(udp), ["10.0.2.2", "10.0.2.2", "10.0.2.2"]);

    const tcp6 = await topo.probe({ from: "pod-a", proto: "tcp", to: "[fd00:10::2:2]:8080" });
    assert.deepEqual(tcp6, [{ ok: true, name: "pod-b", peer: tcp6[0]?.ok ? tcp6[0].peer : "" }]);
    assert.match(tcp6[0]?.ok ? tcp6[0].peer : "", /^\[fd00:10::1:2\]:\d+$/);
  });
});

Deno.test("createTopology() connects external, node and remote pods to each other", async () => {
  const opts = { prefix: "kpt2", pods: PODS, remotePods: [{ name: "pod-r", ip: "10.1.1.2" }] };
  await withTopology(opts, async (topo) => {
    await topo.startEchoServer("node");
    const fromExt = await topo.probe({ from: "external", proto: "tcp", to: "192.168.0.2:80" });
    assert.deepEqual(peerIPs(fromExt), ["203.0.113.2"]);
    assert.deepEqual(names(fromExt), ["node"]);
    const fromExt6 = await topo.probe({ from: "external", proto: "udp", to: "[fd00:192::2]:53" });
    assert.deepEqual(names(fromExt6), ["node"]);
    assert.deepEqual(peerIPs(fromExt6), ["[fd00:203::2]"]);
    const fromPod = await topo.probe({ from: "pod-a", proto: "tcp", to: "192.168.0.2:8080" });
    assert.deepEqual(peerIPs(fromPod), ["10.0.1.2"]);
    const toRemote = await topo.probe({ from: "pod-a", proto: "tcp", to: "10.1.1.2:80" });
    assert.deepEqual([names(toRemote), peerIPs(toRemote)], [["pod-r"], ["10.0.1.2"]]);
    const nodeToPod = await topo.probe({ from: "node", proto: "udp", to: "10.0.2.2:8080" });
    assert.deepEqual([names(nodeToPod), peerIPs(nodeToPod)], [["pod-b"], ["192.168.0.2"]]);
  });
});

Deno.test("a DNAT rule in the node namespace sends a virtual IP to pod-b", async () => {
  await withTopology({ prefix: "kpt3", pods: PODS }, async (topo) => {
    for (
      const [chain, proto] of [["PREROUTING", "tcp"], ["PREROUTING", "udp"], ["OUTPUT", "tcp"]]
    ) {
      await mustExec(topo, "node", "iptables-legacy", [
        ...["-t", "nat", "-A", chain!, "-d", "172.30.0.10/32", "-p", proto!, "--dport", "80"],
        ...["-j", "DNAT", "--to-destination", "10.0.2.2:8080"],
      ]);
    }
    const tcp = await topo.probe({ from: "pod-a", proto: "tcp", to: "172.30.0.10:80", count: 5 });
    assert.deepEqual([names(tcp), peerIPs(tcp)], [
      Array(5).fill("pod-b"),
      Array(5).fill("10.0.1.2"),
    ]);
    const udp = await topo.probe({ from: "pod-a", proto: "udp", to: "172.30.0.10:80", count: 3 });
    assert.deepEqual(names(udp), ["pod-b", "pod-b", "pod-b"]);
    const ext = await topo.probe({ from: "external", proto: "tcp", to: "172.30.0.10:80" });
    assert.deepEqual([names(ext), peerIPs(ext)], [["pod-b"], ["203.0.113.2"]]);
    const node = await topo.probe({ from: "node", proto: "tcp", to: "172.30.0.10:80" });
    assert.deepEqual([names(node), peerIPs(node)], [["pod-b"], ["192.168.0.2"]]);
  });
});

Deno.test("REJECT rules yield refused quickly and DROP yields timeout", async () => {
  await withTopology({ prefix: "kpt4", pods: PODS }, async (topo) => {
    const rules = [
      ["-p", "tcp", "--dport", "80", "-j", "REJECT", "--reject-with", "tcp-reset"],
      ["-p", "udp", "--dport", "53", "-j", "REJECT", "--reject-with", "icmp-port-unreachable"],
      ["-p", "tcp", "--dport", "8080", "-j", "DROP"],
      ["-p", "udp", "--dport", "8080", "-j", "DROP"],
    ];
    for (const rule of rules) {
      await mustExec(topo, "node", "iptables-legacy", ["-A", "FORWARD", "-d", "10.0.2.2", ...rule]);
    }
    let started = Date.now();
    const rejected = [
      ...await topo.probe({ from: "pod-a", proto: "tcp", to: "10.0.2.2:80", count: 5 }),
      ...await topo.probe({ from: "pod-a", proto: "udp", to: "10.0.2.2:53", count: 5 }),
    ];
    assert.deepEqual(names(rejected), Array(10).fill("error:refused"));
    assert.ok(Date.now() - started < 1000, `REJECT probes took ${Date.now() - started} ms`);

    started = Date.now();
    const dropped = [
      ...await topo.probe({
        from: "pod-a",
        proto: "tcp",
        to: "10.0.2.2:8080",
        count: 3,
        timeoutMs: 300,
      }),
      ...await topo.probe({
        from: "pod-a",
        proto: "udp",
        to: "10.0.2.2:8080",
        count: 3,
        timeoutMs: 300,
      }),
    ];
    assert.deepEqual(names(dropped), Array(6).fill("error:timeout"));
    assert.ok(Date.now() - started < 2000, `DROP probes took ${Date.now() - started} ms`);
  });
});

Deno.test("probe() with a fixed UDP source port reuses it for every datagram", async () => {
  await withTopology({ prefix: "kpt5", pods: PODS }, async (topo) => {
    const answers = await topo.probe({
      from: "pod-a",
      proto: "udp",
      to: "10.0.2.2:53",
      count: 4,
      sourcePort: 40123,
    });
    assert.deepEqual(answers, Array(4).fill({ ok: true, name: "pod-b", peer: "10.0.1.2:40123" }));
  });
});

Deno.test("destroy() kills spawned processes and removes every namespace, leftovers included", async () => {
  await preflight();
  const crashed = await createTopology({ prefix: "kpt6", pods: PODS });
  const sleeper = crashed.spawn("pod-a", "sleep", ["600"]);
  // Simulate a crashed run: never destroy `crashed`; the next run must clean up after it.
  const topo = await createTopology({ prefix: "kpt6", pods: [PODS[0]!] });
  try {
    const status = await Promise.race([
      sleeper.status,
      new Promise<null>((r) => setTimeout(() => r(null), 2000)),
    ]);
    assert.ok(status !== null && !status.success, "The leftover process was not killed");
    const proc = topo.spawn("node", "sleep", ["600"]);
    await topo.destroy();
    assert.equal((await proc.status).signal, "SIGTERM");
    await topo.destroy();
  } finally {
    await topo.destroy();
  }
  const left = (await listNamespaces()).filter((n) => n.startsWith("kpt6-"));
  assert.deepEqual(left, []);
});
