/**
 * Endpoint selection with real packets (upstream's CategorizeEndpoints): topology hints for
 * this node, then for its zone (the Node's topology.kubernetes.io/zone label), else every
 * endpoint; serving-terminating endpoints when none is ready; internalTrafficPolicy Local.
 * A zone label change on the Node moves traffic (a full sync). Needs root.
 * IP plan: node 192.168.0.2 (node1), node2 192.168.0.3, local pods 10.0.1.2 / 10.0.2.2 /
 * 10.0.3.2, remote pod 10.1.1.2, services 172.30.0.0/16.
 */
import { list } from "./support/cluster_objects.ts";
import { checkFlows, eventuallyFlows, type FlowCheck } from "./support/flow_check.ts";
import {
  type FlowPort,
  flowService,
  type SelectionEndpoint,
  selectionSlice,
} from "./support/flow_objects.ts";
import { internalLocal, zonedNode1 } from "./support/selection_objects.ts";
import { withProxy } from "./support/with_proxy.ts";

const HTTP: FlowPort = { name: "http", port: 80, targetPort: 8080 };
const A = "10.0.1.2", B = "10.0.2.2", R = "10.1.1.2";

type Ep = Omit<SelectionEndpoint, "ip" | "nodeName">;
const a = (o: Ep = {}): SelectionEndpoint => ({ ip: A, nodeName: "node1", ...o });
const b = (o: Ep = {}): SelectionEndpoint => ({ ip: B, nodeName: "node1", ...o });
const r = (o: Ep = {}): SelectionEndpoint => ({ ip: R, nodeName: "node2", ...o });
const TERMINATING: Ep = { ready: false, serving: true, terminating: true };
const GONE: Ep = { ready: false, serving: false, terminating: true };

/** A ClusterIP service and one slice; `itp` makes its internal traffic policy Local. */
function svc(name: string, ip: string, eps: readonly SelectionEndpoint[], itp = false) {
  const service = flowService("demo", name, ip, [HTTP]);
  return [
    itp ? internalLocal(service) : service,
    selectionSlice("demo", name, `${name}-1`, "IPv4", eps, [HTTP]),
  ];
}

function state(zone: string) {
  return list([
    zonedNode1(zone),
    ...svc("by-node", "172.30.0.70", [
      a({ forNodes: ["node1"], forZones: ["zone-b"] }),
      b({ forNodes: ["node2"], forZones: ["zone-a"] }),
      r({ forNodes: ["node2"], forZones: ["zone-a"] }),
    ]),
    ...svc("by-zone", "172.30.0.71", [
      a({ zone: "zone-b", forZones: ["zone-b"] }),
      b({ zone: "zone-a", forZones: ["zone-a"] }),
      r({ zone: "zone-a", forZones: ["zone-a"] }),
    ]),
    // One endpoint without hints: hints are ignored.
    ...svc("partial", "172.30.0.72", [
      a({ forZones: ["zone-a"] }),
      b(),
      r({ forZones: ["zone-a"] }),
    ]),
    // Hints only for other zones: ignored too.
    ...svc("elsewhere", "172.30.0.73", [a({ forZones: ["zone-c"] }), r({ forZones: ["zone-c"] })]),
    ...svc("terminating", "172.30.0.74", [a(TERMINATING), b(GONE), r(TERMINATING)]),
    ...svc("itp-local", "172.30.0.75", [a(), b(), r()], true),
    ...svc("itp-remote", "172.30.0.76", [r()], true),
    ...svc("itp-terminating", "172.30.0.77", [a(TERMINATING), r()], true),
  ]);
}

const flow = (name: string, ip: string, expect: FlowCheck["expect"]): FlowCheck => ({
  name,
  from: "client",
  to: `${ip}:80`,
  expect,
  ...(typeof expect === "string" ? {} : { masq: false }),
});

Deno.test("e2e: endpoint selection follows node hints, zone hints, terminating fallback and internalTrafficPolicy Local; a zone relabel moves traffic", async () => {
  await withProxy({
    prefix: "sx3",
    ipv6: false,
    pods: [{ name: "pod-a", ip: A }, { name: "pod-b", ip: B }, { name: "client", ip: "10.0.3.2" }],
    remotePods: [{ name: "pod-r", ip: R }],
    state: state("zone-a"),
    echo: { tcp: [8080], udp: [8080] },
  }, async ({ topo, dir }) => {
    await checkFlows(topo, [
      flow("hints for this node win over zone hints", "172.30.0.70", ["pod-a"]),
      flow("hints for this node's zone", "172.30.0.71", ["pod-b", "pod-r"]),
      flow("an endpoint without hints disables hints", "172.30.0.72", ["pod-a", "pod-b", "pod-r"]),
      flow("hints for other zones only are ignored", "172.30.0.73", ["pod-a", "pod-r"]),
      flow("no ready endpoint: serving-terminating ones", "172.30.0.74", ["pod-a", "pod-r"]),
      flow("internalTrafficPolicy Local: local endpoints only", "172.30.0.75", ["pod-a", "pod-b"]),
      flow("internalTrafficPolicy Local without local endpoints drops", "172.30.0.76", "timeout"),
      flow("internalTrafficPolicy Local: local serving-terminating", "172.30.0.77", ["pod-a"]),
    ]);

    await dir.write("cluster.json", state("zone-b"));
    await eventuallyFlows(topo, flow("after relabel to zone-b", "172.30.0.71", ["pod-a"]), 5000);
    await checkFlows(topo, [
      flow("node hints still win after the relabel", "172.30.0.70", ["pod-a"]),
    ]);

    await dir.write("cluster.json", state(""));
    await eventuallyFlows(
      topo,
      flow("a node without a zone ignores zone hints", "172.30.0.71", ["pod-a", "pod-b", "pod-r"]),
      5000,
    );
  });
});
