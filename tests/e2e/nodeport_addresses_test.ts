/**
 * --nodeport-addresses with real packets: NodePorts answer only on node addresses the flag
 * selects. The node gets a second address (198.51.100.2 on eth0) in the test itself; a CIDR
 * is resolved against the node's interfaces at every sync, as upstream does. Needs root.
 * IP plan: node 192.168.0.2 (node1) + 198.51.100.2, local pod 10.0.1.2, services
 * 172.30.0.0/16, external client 203.0.113.2 (its default route is the node).
 */
import assert from "node:assert/strict";
import { type Topology, TOPOLOGY_IPS } from "../../scripts/netns/mod.ts";
import { list, node1 } from "./support/cluster_objects.ts";
import { checkFlows, eventuallyFlows } from "./support/flow_check.ts";
import { type FlowPort, flowService, flowSlice, local } from "./support/flow_objects.ts";
import { eventually } from "./support/proxy_process.ts";
import { type ProxyScenario, withProxy } from "./support/with_proxy.ts";

const POD_A = "10.0.1.2";
const NODE = TOPOLOGY_IPS.node;
const SECOND = "198.51.100.2";
const TARGET = 8080;
const NP: FlowPort = { name: "http", port: 80, targetPort: TARGET, nodePort: 30160 };

/** node1 (with `labels` added, to make the Node change) and a NodePort service on pod-a. */
function clusterState(labels: Record<string, string> = {}) {
  const node = node1();
  return list([
    { ...node, metadata: { ...node.metadata, labels: { ...node.metadata.labels, ...labels } } },
    flowService("demo", "np", "172.30.0.60", [NP], { type: "NodePort" }),
    flowSlice("demo", "np", "np-1", [local(POD_A)], [NP]),
  ]);
}

async function addSecondAddress(topo: Topology): Promise<void> {
  const out = await topo.exec("node", "ip", ["addr", "add", `${SECOND}/24`, "dev", "eth0"]);
  assert.equal(out.code, 0, out.stderr);
}

/** The destinations KUBE-SERVICES sends to KUBE-NODEPORTS, as the kernel holds them. */
async function nodePortDestinations(topo: Topology): Promise<string[]> {
  const out = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.split("\n")
    .filter((l) => l.startsWith("-A KUBE-SERVICES ") && l.endsWith("-j KUBE-NODEPORTS"))
    .map((l) => / -d (\S+) /.exec(l)?.[1] ?? "any local");
}

/** Every test's scenario: pod-a on the node, echo on TARGET, the proxy run with `args`. */
function scenario(prefix: string, args: readonly string[] = []): ProxyScenario {
  return {
    prefix,
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }],
    state: clusterState(),
    echo: { tcp: [TARGET], udp: [] },
    args,
  };
}

Deno.test("e2e: --nodeport-addresses CIDR opens NodePorts on the node address inside it only", async () => {
  await withProxy(
    scenario("la6", ["--nodeport-addresses=198.51.100.0/24"]),
    async ({ topo, dir }) => {
      // No node address is inside the CIDR yet: no NodePort anywhere.
      assert.deepEqual(await nodePortDestinations(topo), []);
      // Add one, and make the Node change so a sync runs (upstream re-reads addresses each sync).
      await addSecondAddress(topo);
      await dir.write("cluster.json", clusterState({ "example.com/touched": "1" }));
      await eventually(
        "a NodePort jump for the second address",
        10_000,
        async () => (await nodePortDestinations(topo)).includes(`${SECOND}/32`),
      );
      assert.deepEqual(await nodePortDestinations(topo), [`${SECOND}/32`]);
      await checkFlows(topo, [
        {
          name: "external -> NodePort on the address inside the CIDR",
          from: "external",
          to: `${SECOND}:30160`,
          expect: ["pod-a"],
          masq: true,
        },
        {
          name: "external -> NodePort on the node IP outside the CIDR",
          from: "external",
          to: `${NODE}:30160`,
          expect: "refused",
        },
        {
          name: "the node itself -> localhost NodePort (loopback is outside the CIDR)",
          from: "node",
          to: "127.0.0.1:30160",
          expect: "refused",
        },
      ]);
    },
  );
});

Deno.test("e2e: --nodeport-addresses primary opens NodePorts on the node's primary IP only", async () => {
  await withProxy(scenario("la7", ["--nodeport-addresses=primary"]), async ({ topo }) => {
    await addSecondAddress(topo);
    assert.deepEqual(await nodePortDestinations(topo), [`${NODE}/32`]);
    await eventuallyFlows(topo, {
      name: "external -> NodePort on the primary node IP",
      from: "external",
      to: `${NODE}:30160`,
      expect: ["pod-a"],
      masq: true,
    }, 5_000);
    await checkFlows(topo, [
      {
        name: "external -> NodePort on the second address",
        from: "external",
        to: `${SECOND}:30160`,
        expect: "refused",
      },
    ]);
  });
});

Deno.test("e2e: without --nodeport-addresses NodePorts answer on every node address", async () => {
  await withProxy(scenario("la8"), async ({ topo }) => {
    await addSecondAddress(topo);
    assert.deepEqual(await nodePortDestinations(topo), ["any local"]);
    await checkFlows(topo, [
      {
        name: "external -> NodePort on the node IP",
        from: "external",
        to: `${NODE}:30160`,
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "external -> NodePort on the second address",
        from: "external",
        to: `${SECOND}:30160`,
        expect: ["pod-a"],
        masq: true,
      },
    ]);
  });
});
