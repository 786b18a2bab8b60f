/**
 * Upstream's packet-flow cases (runPacketFlowTests) as tables, for every mode: NodePorts,
 * externalIPs and LB IPs by traffic policy, no endpoints, source ranges, affinity, TCP and UDP.
 * IPVS differs where upstream's IPVS proxier does (REFERENCE_MODES §2-3): an ETP Local
 * NodePort has one virtual server holding only the local endpoints, falling back to every
 * endpoint (un-SNATed) when there is none; localhost NodePorts are not served. A service
 * without endpoints is refused there too: the kernel answers a virtual server without real
 * servers with ICMP port unreachable (ip_vs_leave), which a TCP connect sees as refused.
 * IP plan: node 192.168.0.2 (node1), node2 192.168.0.3, local pods 10.0.1.2 / 10.0.2.2 / 10.0.3.2,
 * remote pod 10.1.1.2, services 172.30.0.0/16, external client 203.0.113.2. The external client's
 * default route is the node, so LB IPs and externalIPs in 198.18.0.0/24 reach it.
 */
import { TOPOLOGY_IPS } from "../../../scripts/netns/mod.ts";
import { list, node1 } from "../support/cluster_objects.ts";
import type { FlowCase, FlowTable } from "../support/flow_table.ts";
import {
  type FlowEndpoint,
  type FlowPort,
  flowService,
  type FlowServiceSpec,
  flowSlice,
  local,
  remote,
} from "../support/flow_objects.ts";

const POD_A = "10.0.1.2", POD_B = "10.0.2.2", CLIENT = "10.0.3.2", POD_R = "10.1.1.2";
const NODE = TOPOLOGY_IPS.node;
/** Echo servers listen only on the target port, so an answer proves targetPort mapping. */
const TARGET = 8080;

function port(name: string, port: number, extra: Partial<FlowPort> = {}): FlowPort {
  return { name, port, targetPort: TARGET, ...extra };
}

/** A service plus one EndpointSlice holding all its endpoints. */
function serviceWith(
  name: string,
  clusterIP: string,
  ports: readonly FlowPort[],
  spec: FlowServiceSpec,
  endpoints: readonly FlowEndpoint[],
): unknown[] {
  return [
    flowService("demo", name, clusterIP, ports, spec),
    flowSlice("demo", name, `${name}-1`, endpoints, ports),
  ];
}

/**
 * A table on the shared topology (pod-a, pod-b and client on the node, pod-r on node2), where a
 * masqueraded external client must reach the endpoint as the node IP.
 */
function table(
  name: string,
  stem: string,
  objects: readonly unknown[],
  cases: readonly FlowCase[],
): FlowTable {
  const external = (c: FlowCase) => c.from === "external" && c.masq === true;
  return {
    name,
    stem,
    pods: [
      { name: "pod-a", ip: POD_A },
      { name: "pod-b", ip: POD_B },
      { name: "client", ip: CLIENT },
    ],
    remotePods: [{ name: "pod-r", ip: POD_R }],
    state: list([node1(), ...objects]),
    echo: { tcp: [TARGET], udp: [TARGET] },
    cases: cases.map((c) => external(c) ? { ...c, masqSource: NODE } : c),
  };
}

/** TCP and UDP on one port reach their own endpoints, on the target port. */
function tableProto(): FlowTable {
  const tcp = port("tcp", 80, { nodePort: 30070 });
  const udp = port("udp", 80, { protocol: "UDP", nodePort: 30070 });
  const objects = [
    flowService("demo", "mixed", "172.30.0.10", [tcp, udp], { type: "NodePort" }),
    flowSlice("demo", "mixed", "mixed-tcp", [local(POD_A)], [tcp]),
    flowSlice("demo", "mixed", "mixed-udp", [local(POD_B)], [udp]),
  ];
  return table(
    "TCP and UDP on one port reach their own endpoints, on the target port",
    "fproto",
    objects,
    [
      { name: "pod -> clusterIP TCP", from: "client", to: "172.30.0.10:80", expect: ["pod-a"] },
      {
        name: "pod -> clusterIP UDP",
        from: "client",
        proto: "udp",
        to: "172.30.0.10:80",
        expect: ["pod-b"],
        masq: false,
      },
      {
        name: "external -> NodePort TCP",
        from: "external",
        to: `${NODE}:30070`,
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "external -> NodePort UDP",
        from: "external",
        proto: "udp",
        to: `${NODE}:30070`,
        expect: ["pod-b"],
        masq: true,
      },
      // Hairpin: an endpoint reaching itself through its own ClusterIP gets its answer back,
      // from a masqueraded source (iptables: KUBE-SEP's -s rule; IPVS: the KUBE-LOOP-BACK set).
      {
        name: "pod -> its own clusterIP TCP (hairpin)",
        from: "pod-a",
        to: "172.30.0.10:80",
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "pod -> its own clusterIP UDP (hairpin)",
        from: "pod-b",
        proto: "udp",
        to: "172.30.0.10:80",
        expect: ["pod-b"],
        masq: true,
      },
    ],
  );
}

/** A service without endpoints rejects its clusterIP, externalIP, NodePort and LB IP at once. */
function tableRej(): FlowTable {
  const p = port("http", 80, { nodePort: 30071 });
  const dns = port("dns", 53, { protocol: "UDP", nodePort: 30072 });
  const objects = [
    flowService("demo", "empty", "172.30.0.11", [p, dns], {
      externalIPs: ["198.18.0.11"],
      loadBalancerIPs: ["198.18.0.111"],
    }),
    flowSlice("demo", "empty", "empty-1", [], [p, dns]),
  ];
  return table(
    "a service without endpoints rejects its clusterIP, externalIP, NodePort and LB IP at once",
    "frej",
    objects,
    [
      { name: "pod -> clusterIP", from: "client", to: "172.30.0.11:80", expect: "refused" },
      { name: "external -> externalIP", from: "external", to: "198.18.0.11:80", expect: "refused" },
      { name: "external -> NodePort", from: "external", to: `${NODE}:30071`, expect: "refused" },
      { name: "external -> LB IP", from: "external", to: "198.18.0.111:80", expect: "refused" },
      // UDP too: REJECT's ICMP port unreachable; IPVS sends the same for a virtual server
      // without real servers (ip_vs_leave), observed in the guest.
      {
        name: "pod -> clusterIP UDP",
        from: "client",
        proto: "udp",
        to: "172.30.0.11:53",
        expect: "refused",
      },
    ],
  );
}

/** External -> NodePort, LB IP and externalIP by traffic policy: Cluster masquerades to all, Local keeps the source and stays local. */
function tableEtp(): FlowTable {
  const cluster = port("http", 80, { nodePort: 30080 });
  const localP = port("http", 80, { nodePort: 30081 });
  const remoteOnly = port("http", 80, { nodePort: 30082 });
  const objects = [
    ...serviceWith("cluster", "172.30.0.20", [cluster], {
      externalIPs: ["198.18.0.20"],
      loadBalancerIPs: ["198.18.0.120"],
    }, [local(POD_A), remote(POD_R)]),
    ...serviceWith("local", "172.30.0.21", [localP], {
      externalTrafficPolicy: "Local",
      externalIPs: [NODE],
      loadBalancerIPs: ["198.18.0.121"],
    }, [local(POD_A), remote(POD_R)]),
    ...serviceWith("remote-only", "172.30.0.22", [remoteOnly], {
      externalTrafficPolicy: "Local",
      externalIPs: ["198.18.0.22"],
      loadBalancerIPs: ["198.18.0.122"],
    }, [remote(POD_R)]),
  ];
  const both = ["pod-a", "pod-r"];
  return table(
    "external -> NodePort, LB IP and externalIP by traffic policy: Cluster masquerades to all, Local keeps the source and stays local",
    "fetp",
    objects,
    [
      // ETP Cluster
      {
        name: "ETP Cluster: external -> NodePort",
        from: "external",
        to: `${NODE}:30080`,
        expect: both,
        masq: true,
      },
      {
        name: "ETP Cluster: external -> LB IP",
        from: "external",
        to: "198.18.0.120:80",
        expect: both,
        masq: true,
      },
      {
        name: "ETP Cluster: external -> externalIP",
        from: "external",
        to: "198.18.0.20:80",
        expect: both,
        masq: true,
      },
      {
        name: "ETP Cluster: the node itself -> NodePort",
        from: "node",
        to: `${NODE}:30080`,
        expect: both,
      },
      {
        name: "ETP Cluster: the node itself -> localhost NodePort (route_localnet)",
        from: "node",
        to: "127.0.0.1:30080",
        expect: both,
        // Upstream serves localhost NodePorts in iptables mode only.
        byMode: { ipvs: { expect: "refused" }, nftables: { expect: "refused" } },
      },
      {
        name: "ETP Cluster: pod -> clusterIP",
        from: "client",
        to: "172.30.0.20:80",
        expect: both,
        masq: false,
      },
      // ETP Local with a local endpoint
      {
        name: "ETP Local: external -> NodePort",
        from: "external",
        to: `${NODE}:30081`,
        expect: ["pod-a"],
        masq: false,
      },
      {
        name: "ETP Local: external -> LB IP",
        from: "external",
        to: "198.18.0.121:80",
        expect: ["pod-a"],
        masq: false,
      },
      {
        name: "ETP Local: external -> externalIP (the node IP)",
        from: "external",
        to: `${NODE}:80`,
        expect: ["pod-a"],
        masq: false,
      },
      {
        name: "ETP Local: pod -> clusterIP reaches local and remote",
        from: "client",
        to: "172.30.0.21:80",
        expect: both,
        masq: false,
      },
      {
        name: "ETP Local: pod -> NodePort is treated as cluster traffic",
        from: "client",
        to: `${NODE}:30081`,
        expect: both,
        // IPVS: one virtual server per NodePort, holding only the local endpoints (§2).
        byMode: { ipvs: { expect: ["pod-a"] } },
      },
      {
        name: "ETP Local: the node itself -> NodePort reaches local and remote",
        from: "node",
        to: `${NODE}:30081`,
        expect: both,
        byMode: { ipvs: { expect: ["pod-a"] } },
      },
      // ETP Local without a local endpoint
      {
        name: "ETP Local, remote only: external -> NodePort dropped",
        from: "external",
        to: `${NODE}:30082`,
        expect: "timeout",
        // IPVS falls back to the cluster endpoints, reached un-SNATed (PR #97081).
        byMode: { ipvs: { expect: ["pod-r"], masq: false } },
      },
      {
        name: "ETP Local, remote only: external -> LB IP dropped",
        from: "external",
        to: "198.18.0.122:80",
        expect: "timeout",
        // IPVS falls back to the cluster endpoints, reached un-SNATed (PR #97081).
        byMode: { ipvs: { expect: ["pod-r"], masq: false } },
      },
      {
        name: "ETP Local, remote only: external -> externalIP dropped",
        from: "external",
        to: "198.18.0.22:80",
        expect: "timeout",
        // IPVS falls back to the cluster endpoints, reached un-SNATed (PR #97081).
        byMode: { ipvs: { expect: ["pod-r"], masq: false } },
      },
      {
        name: "ETP Local, remote only: pod -> clusterIP reaches the remote endpoint",
        from: "client",
        to: "172.30.0.22:80",
        expect: ["pod-r"],
        masq: false,
      },
    ],
  );
}

/** LoadBalancerSourceRanges admit listed clients to the LB IP, drop others, and leave the NodePort open. */
function tableSrc(): FlowTable {
  const allowed = port("http", 80, { nodePort: 30090 });
  const blocked = port("http", 80, { nodePort: 30091 });
  const objects = [
    ...serviceWith("allowed", "172.30.0.30", [allowed], {
      loadBalancerIPs: ["198.18.0.130"],
      loadBalancerSourceRanges: ["203.0.113.0/24"],
    }, [local(POD_A)]),
    ...serviceWith("blocked", "172.30.0.31", [blocked], {
      loadBalancerIPs: ["198.18.0.131"],
      loadBalancerSourceRanges: ["198.51.100.0/24"],
    }, [local(POD_A)]),
  ];
  return table(
    "loadBalancerSourceRanges admit listed clients to the LB IP, drop others, and leave the NodePort open",
    "fsrc",
    objects,
    [
      {
        name: "allowed client -> LB IP",
        from: "external",
        to: "198.18.0.130:80",
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "blocked client -> LB IP",
        from: "external",
        to: "198.18.0.131:80",
        expect: "timeout",
      },
      {
        name: "blocked client -> NodePort",
        from: "external",
        to: `${NODE}:30091`,
        expect: ["pod-a"],
        masq: true,
      },
      {
        name: "pod -> clusterIP of the blocked service",
        from: "client",
        to: "172.30.0.31:80",
        expect: ["pod-a"],
        masq: false,
      },
    ],
  );
}

/** ClientIP session affinity keeps a client on one endpoint, from a pod and from outside. */
function tableAffinity(): FlowTable {
  const p = port("http", 80, { nodePort: 30100 });
  const objects = serviceWith(
    "sticky",
    "172.30.0.40",
    [p],
    { type: "NodePort", affinitySeconds: 600 },
    [local(POD_A), local(POD_B), remote(POD_R)],
  );
  const all = ["pod-a", "pod-b", "pod-r"];
  return table("ClientIP session affinity keeps a client on one endpoint", "faff", objects, [
    { name: "pod -> clusterIP", from: "client", to: "172.30.0.40:80", expect: all, sticky: true },
    {
      name: "external -> NodePort",
      from: "external",
      to: `${NODE}:30100`,
      expect: all,
      sticky: true,
    },
  ]);
}

/** Every packet-flow table, in the order the tests run them. */
export const PACKET_FLOW_TABLES: readonly FlowTable[] = [
  tableProto(),
  tableRej(),
  tableEtp(),
  tableSrc(),
  tableAffinity(),
];
