/**
 * --detect-local-mode with real packets: for each mode, traffic the detector calls local (this
 * node's pods) reaches a clusterIP with its source intact, and traffic it does not (the external
 * client; the remote pod unless the mode is ClusterCIDR) is masqueraded. An ETP Local NodePort
 * shows the other use of the detector: "local" pods are sent to every endpoint, others only to
 * the local one. Needs root; fails loudly without it.
 * IP plan: node 192.168.0.2 (node1, podCIDR 10.0.0.0/16 where given), local pods 10.0.1.2 /
 * 10.0.3.2, remote pod 10.1.1.2 on node2, services 172.30.0.0/16, external client 203.0.113.2.
 */
import assert from "node:assert/strict";
import { planTopology, type Topology, TOPOLOGY_IPS } from "../../scripts/netns/mod.ts";
import { list, node1 } from "./support/cluster_objects.ts";
import { checkFlows, eventuallyFlows, type FlowCheck } from "./support/flow_check.ts";
import { type FlowPort, flowService, flowSlice, local, remote } from "./support/flow_objects.ts";
import { type ProxyScenario, withProxy } from "./support/with_proxy.ts";

const POD_A = "10.0.1.2", CLIENT = "10.0.3.2", POD_R = "10.1.1.2";
const NODE = TOPOLOGY_IPS.node;
const TARGET = 8080;
const WEB: FlowPort = { name: "http", port: 80, targetPort: TARGET };
const ETPL: FlowPort = { name: "http", port: 80, targetPort: TARGET, nodePort: 30151 };

/** node1 with the given spec.podCIDRs. */
function nodeWithPodCIDRs(podCIDRs: readonly string[]) {
  return { ...node1(), spec: { podCIDRs: [...podCIDRs] } };
}

/** `web` (clusterIP, endpoint pod-a) and `etpl` (ETP Local NodePort, pod-a and pod-r). */
function clusterState(node: unknown) {
  return list([
    node,
    flowService("demo", "web", "172.30.0.50", [WEB]),
    flowSlice("demo", "web", "web-1", [local(POD_A)], [WEB]),
    flowService("demo", "etpl", "172.30.0.51", [ETPL], {
      type: "NodePort",
      externalTrafficPolicy: "Local",
    }),
    flowSlice("demo", "etpl", "etpl-1", [local(POD_A), remote(POD_R)], [ETPL]),
  ]);
}

/** Every mode's scenario: pod-a and client on the node, pod-r on node2, echo on TARGET. */
function scenario(
  prefix: string,
  args: readonly string[],
  extra: Partial<ProxyScenario> = {},
): ProxyScenario {
  return {
    prefix,
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "client", ip: CLIENT }],
    remotePods: [{ name: "pod-r", ip: POD_R }],
    state: clusterState(node1()),
    echo: { tcp: [TARGET], udp: [] },
    args,
    ...extra,
  };
}

/** The cases every mode must pass; `remoteIsLocal` says whether the detector covers pod-r. */
function detectLocalCases(remoteIsLocal: boolean): FlowCheck[] {
  return [
    {
      name: "local pod -> clusterIP keeps its source",
      from: "client",
      to: "172.30.0.50:80",
      expect: ["pod-a"],
      masq: false,
    },
    {
      name: "external client -> clusterIP is masqueraded",
      from: "external",
      to: "172.30.0.50:80",
      expect: ["pod-a"],
      masq: true,
    },
    {
      name: `remote pod -> clusterIP ${remoteIsLocal ? "keeps its source" : "is masqueraded"}`,
      from: "pod-r",
      to: "172.30.0.50:80",
      expect: ["pod-a"],
      masq: !remoteIsLocal,
    },
    {
      name: "local pod -> ETP Local NodePort is cluster traffic: every endpoint",
      from: "client",
      to: `${NODE}:30151`,
      expect: ["pod-a", "pod-r"],
    },
    remoteIsLocal
      ? {
        name: "remote pod -> ETP Local NodePort is cluster traffic: every endpoint",
        from: "pod-r",
        to: `${NODE}:30151`,
        expect: ["pod-a", "pod-r"],
      }
      : {
        name: "remote pod -> ETP Local NodePort is external: local endpoint, source kept",
        from: "pod-r",
        to: `${NODE}:30151`,
        expect: ["pod-a"],
        masq: false,
      },
  ];
}

/** Asserts the kernel's masquerade rule for `web` uses the detector's "not local" match. */
async function assertNotLocalMatch(topo: Topology, match: string): Promise<void> {
  const out = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
  assert.equal(out.code, 0, out.stderr);
  const masq = out.stdout.split("\n").filter((l) =>
    l.startsWith("-A KUBE-SVC-") && l.includes("demo/web:http cluster IP") &&
    l.endsWith("-j KUBE-MARK-MASQ")
  );
  assert.equal(masq.length, 1, out.stdout);
  assert.ok(masq[0]!.includes(` ${match} `), `expected "${match}" in ${masq[0]}`);
}

Deno.test("e2e: detect-local ClusterCIDR treats every pod in --cluster-cidr as local", async () => {
  await withProxy(
    scenario("la1", ["--detect-local-mode=ClusterCIDR", "--cluster-cidr=10.0.0.0/8"]),
    async ({ topo }) => {
      await assertNotLocalMatch(topo, "! -s 10.0.0.0/8");
      await checkFlows(topo, detectLocalCases(true));
    },
  );
});

Deno.test("e2e: detect-local NodeCIDR treats only this node's podCIDR as local", async () => {
  await withProxy(
    scenario("la2", ["--detect-local-mode=NodeCIDR"], {
      state: clusterState(nodeWithPodCIDRs(["10.0.0.0/16"])),
    }),
    async ({ topo }) => {
      await assertNotLocalMatch(topo, "! -s 10.0.0.0/16");
      await checkFlows(topo, detectLocalCases(false));
    },
  );
});

Deno.test("e2e: detect-local NodeCIDR masquerades nothing by locality until the Node gets a podCIDR, then re-syncs", async () => {
  await withProxy(scenario("la3", ["--detect-local-mode=NodeCIDR"]), async ({ topo, dir }) => {
    await checkFlows(topo, [
      {
        name: "no podCIDR yet: external client -> clusterIP keeps its source",
        from: "external",
        to: "172.30.0.50:80",
        expect: ["pod-a"],
        masq: false,
      },
    ]);
    await dir.write("cluster.json", clusterState(nodeWithPodCIDRs(["10.0.0.0/16"])));
    await eventuallyFlows(topo, {
      name: "podCIDR assigned: external client -> clusterIP is masqueraded",
      from: "external",
      to: "172.30.0.50:80",
      expect: ["pod-a"],
      masq: true,
    }, 10_000);
    await checkFlows(topo, detectLocalCases(false));
  });
});

Deno.test("e2e: detect-local BridgeInterface treats traffic entering the pod bridge as local", async () => {
  await withProxy(
    scenario("la4", ["--detect-local-mode=BridgeInterface", "--pod-bridge-interface=cbr0"], {
      podBridge: "cbr0",
    }),
    async ({ topo }) => {
      const link = await topo.exec("node", "ip", ["-o", "link", "show", "master", "cbr0"]);
      assert.equal(link.stdout.trim().split("\n").length, 2, `pods not on cbr0: ${link.stdout}`);
      await assertNotLocalMatch(topo, "! -i cbr0");
      await checkFlows(topo, detectLocalCases(false));
    },
  );
});

Deno.test("e2e: detect-local InterfaceNamePrefix treats traffic entering veth* as local", async () => {
  await withProxy(
    scenario("la5", [
      "--detect-local-mode=InterfaceNamePrefix",
      "--pod-interface-name-prefix=veth",
    ]),
    async ({ topo }) => {
      await assertNotLocalMatch(topo, "! -i veth+");
      await checkFlows(topo, detectLocalCases(false));
    },
  );
});

Deno.test("planTopology() podBridge makes the node's pod veths ports of one bridge", () => {
  const plan = planTopology({
    prefix: "lab",
    podBridge: "cbr0",
    pods: [{ name: "a", ip: "10.0.1.2" }],
    remotePods: [{ name: "r", ip: "10.1.1.2" }],
  });
  assert.deepEqual(plan.pods.map((p) => [p.name, p.bridge]), [["a", "cbr0"], ["r", null]]);
  assert.ok(plan.links.get("lab-node")!.includes("link add cbr0 type bridge"));
  const node = plan.config.get("lab-node")!;
  assert.ok(node.includes("link set veth0 master cbr0"));
  assert.ok(node.includes("route add 10.0.1.2/32 dev cbr0 src 192.168.0.2"));
  assert.ok(node.includes("addr add fe80::1/64 dev cbr0 nodad"));
  assert.ok(!node.includes("addr add fe80::1/64 dev veth0 nodad"));
  assert.ok(
    plan.config.get("lab-node2")!.includes("route add 10.1.1.2/32 dev veth0 src 192.168.0.3"),
  );
  assert.equal(planTopology({ prefix: "lab" }).podBridge, null);
  assert.throws(
    () => planTopology({ prefix: "lab", podBridge: "eth0" }),
    /Invalid pod bridge "eth0"/,
  );
});
