/**
 * A service's lifecycle in a real IPVS kernel: created as a NodePort, its port changed, an
 * endpoint added and one removed, its type changed to ClusterIP, then deleted. After each
 * change the virtual and real servers (`ipvsadm -Sn`), kube-ipvs0's addresses and the ipset
 * members follow, and so does the traffic.
 */
import assert from "node:assert/strict";
import { scaledMs, type Topology, TOPOLOGY_IPS } from "../../../scripts/netns/mod.ts";
import {
  checkFlows,
  clientAddress,
  eventuallyFlows,
  type FlowCheck,
  judgeFlow,
  probeFlow,
} from "../../e2e/support/flow_check.ts";
import { flowService, flowSlice, local } from "../../e2e/support/flow_objects.ts";
import { eventually } from "../../e2e/support/proxy_process.ts";
import type { ClusterState } from "./cluster_state.ts";
import { ipsetMembers, ipvsSave, kubeIpvs0Addresses, onNode } from "./ipvs_node.ts";

const VIP = "172.30.0.60";
const NODE = TOPOLOGY_IPS.node;
const NODE_PORT = 30160;
const POD_A = "10.0.1.2", POD_B = "10.0.2.2";

/** What the node holds for this service, reduced to what the test compares. */
interface Programmed {
  /** `ipvsadm -Sn` lines of the ClusterIP's virtual servers, sorted, draining ones left out. */
  readonly clusterIP: string[];
  /** Whether any NodePort virtual server exists, and whether one is on the node IP. */
  readonly nodePort: boolean;
  readonly onNodeIP: boolean;
  /** Whether kube-ipvs0 holds the ClusterIP. */
  readonly bound: boolean;
  readonly clusterIPSet: string[];
  readonly nodePortSet: string[];
  /** KUBE-LOOP-BACK members of this service's endpoints (the only ones on tcp:8080). */
  readonly loopBackSet: string[];
}

/** Reads the node; a real server at weight 0 (draining the probes' connections) is left out. */
async function programmed(topo: Topology): Promise<Programmed> {
  const save = await ipvsSave(topo);
  const nodePortLines = save.filter((l) => l.startsWith("-A ") && l.includes(`:${NODE_PORT} `));
  return {
    clusterIP: save.filter((l) => l.includes(` ${VIP}:`) && !l.endsWith(" -w 0")),
    nodePort: nodePortLines.length > 0,
    onNodeIP: nodePortLines.some((l) => l.includes(` ${NODE}:${NODE_PORT} `)),
    bound: ((await kubeIpvs0Addresses(topo)) ?? []).includes(`${VIP}/32`),
    clusterIPSet: (await ipsetMembers(topo, "KUBE-CLUSTER-IP")).filter((m) =>
      m.startsWith(`${VIP},`)
    ),
    nodePortSet: (await ipsetMembers(topo, "KUBE-NODE-PORT-TCP")).filter((m) =>
      m === `${NODE_PORT}`
    ),
    loopBackSet: (await ipsetMembers(topo, "KUBE-LOOP-BACK")).filter((m) =>
      m.includes(",tcp:8080,")
    ),
  };
}

/** The expected state for service port `port` with these endpoints, NodePort or not. */
function expected(port: number, pods: readonly string[], nodePort: boolean): Programmed {
  const vs = `-t ${VIP}:${port}`;
  return {
    clusterIP: [`-A ${vs} -s rr`, ...pods.map((ip) => `-a ${vs} -r ${ip}:8080 -m -w 1`)].sort(),
    nodePort,
    onNodeIP: nodePort,
    bound: true,
    clusterIPSet: [`${VIP},tcp:${port}`],
    nodePortSet: nodePort ? [`${NODE_PORT}`] : [],
    loopBackSet: pods.map((ip) => `${ip},tcp:8080,${ip}`).sort(),
  };
}

const DELETED: Programmed = {
  clusterIP: [],
  nodePort: false,
  onNodeIP: false,
  bound: false,
  clusterIPSet: [],
  nodePortSet: [],
  loopBackSet: [],
};

function objects(port: number, pods: readonly string[], nodePort: boolean): unknown[] {
  const ports = [{
    name: "web",
    port,
    targetPort: 8080,
    ...(nodePort ? { nodePort: NODE_PORT } : {}),
  }];
  return [
    flowService("demo", "life", VIP, ports, { type: nodePort ? "NodePort" : "ClusterIP" }),
    flowSlice("demo", "life", "life-1", pods.map(local), ports),
  ];
}

/**
 * Publishes, waits until the node holds `want`, then probes `flows`. With `settle`, a flow may
 * need a second try: after an endpoint is removed, a client that reuses the source port of an
 * earlier connection to it (still in IPVS's TIME_WAIT, its real server now at weight 0) has
 * that SYN dropped by IPVS (expire_nodest_conn, as upstream's nodes do) until the old entry
 * goes; the first try's failures and `ipvsadm -Lnc` are printed.
 */
async function change(
  topo: Topology,
  cluster: ClusterState,
  what: string,
  svc: unknown[],
  want: Programmed,
  flows: readonly FlowCheck[],
  settle = false,
): Promise<void> {
  cluster.set("life", svc);
  await cluster.publish();
  const key = (p: Programmed) => JSON.stringify(Object.entries(p).sort());
  let seen = "";
  try {
    await eventually(what, scaledMs(20_000), async () => {
      seen = key(await programmed(topo));
      return seen === key(want);
    });
  } catch (err) {
    throw new Error(`${(err as Error).message}; wanted ${key(want)}, saw ${seen}`);
  }
  const named = flows.map((f) => ({ ...f, name: `${what}: ${f.name}` }));
  if (!settle) return await checkFlows(topo, named);
  for (const f of named) {
    const failure = judgeFlow(f, clientAddress(topo, f.from, f.to), await probeFlow(topo, f));
    if (failure === null) continue;
    console.log(`${f.name}, first try: ${failure}\n${await onNode(topo, "ipvsadm", ["-Lnc"])}`);
    await eventuallyFlows(topo, f, scaledMs(10_000));
  }
}

/** Creates, updates and deletes the service `life` (VIP 172.30.0.60, NodePort 30160). */
export async function serviceLifecycle(topo: Topology, cluster: ClusterState): Promise<void> {
  const toVip = (port: number) => `${VIP}:${port}`;
  const toNodePort = `${NODE}:${NODE_PORT}`;
  await change(
    topo,
    cluster,
    "created as NodePort",
    objects(80, [POD_A], true),
    expected(80, [POD_A], true),
    [
      { name: "pod -> clusterIP", from: "client", to: toVip(80), expect: ["pod-a"], masq: false },
      {
        name: "external -> NodePort",
        from: "external",
        to: toNodePort,
        expect: ["pod-a"],
        masq: true,
        masqSource: NODE,
      },
    ],
  );
  await change(
    topo,
    cluster,
    "port 80 -> 81, pod-b added",
    objects(81, [POD_A, POD_B], true),
    expected(81, [POD_A, POD_B], true),
    [
      {
        name: "pod -> new port",
        from: "client",
        to: toVip(81),
        expect: ["pod-a", "pod-b"],
        masq: false,
      },
      { name: "pod -> old port", from: "client", to: toVip(80), expect: "refused" },
    ],
  );
  await change(
    topo,
    cluster,
    "pod-a removed",
    objects(81, [POD_B], true),
    expected(81, [POD_B], true),
    [
      {
        name: "external -> NodePort",
        from: "external",
        to: toNodePort,
        expect: ["pod-b"],
        masq: true,
      },
    ],
    true,
  );
  await change(
    topo,
    cluster,
    "NodePort -> ClusterIP",
    objects(81, [POD_B], false),
    expected(81, [POD_B], false),
    [
      { name: "pod -> clusterIP", from: "client", to: toVip(81), expect: ["pod-b"], masq: false },
      { name: "external -> former NodePort", from: "external", to: toNodePort, expect: "refused" },
    ],
  );
  await change(topo, cluster, "deleted", [], DELETED, []);
  const gone = await topo.probe({
    from: "client",
    proto: "tcp",
    to: toVip(81),
    count: 2,
    timeoutMs: 1000,
  });
  assert.ok(gone.every((a) => !a.ok), `the deleted service still answers: ${JSON.stringify(gone)}`);
}
