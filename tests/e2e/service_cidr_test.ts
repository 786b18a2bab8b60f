/**
 * The real program in nftables mode with a ServiceCIDR in its manifests, with real packets: new
 * traffic to an address of the ServiceCIDR that no Service holds is dropped (the probe times
 * out), while an unused port of an allocated ClusterIP is still rejected (refused) and the
 * Service's own port answers. The unallocated address is routed to the external namespace,
 * which holds it and answers with a reset: so without the drop rule (the ServiceCIDR removed
 * from the manifests) the same probe is refused, which shows the rule is what dropped it.
 * Needs root and nft; fails loudly without them.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import type { Topology } from "../../scripts/netns/mod.ts";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { eventually } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";
import { clusterIPsCheck } from "./support/nft_node.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];
const POD_A = "10.0.1.2", CLIENT = "10.0.3.2";
const UNALLOCATED_IP = "172.30.9.9";
const UNALLOCATED = `${UNALLOCATED_IP}:80`;
const SERVICE_CIDR = {
  apiVersion: "networking.k8s.io/v1",
  kind: "ServiceCIDR",
  metadata: { name: "kubernetes" },
  spec: { cidrs: ["172.30.0.0/16"] },
};

function cluster(withServiceCIDR: boolean) {
  return list([
    node1(),
    service("demo", "web", "172.30.0.10", WEB),
    endpointSlice("demo", "web", [POD_A], WEB),
    ...(withServiceCIDR ? [SERVICE_CIDR] : []),
  ]);
}

/** How the client's TCP connections to `to` end: pod names or `error:<kind>`. */
async function outcome(topo: Topology, to: string, count = 3): Promise<string[]> {
  const answers = await topo.probe({ from: "client", proto: "tcp", to, count, timeoutMs: 700 });
  return [...new Set(answers.map((a) => (a.ok ? a.name : `error:${a.error}`)))].sort();
}

/** Routes UNALLOCATED_IP from the node to the external namespace, which holds it (no listener). */
async function routeUnallocatedToExternal(topo: Topology): Promise<void> {
  for (
    const [ns, args] of [
      ["external", ["addr", "add", `${UNALLOCATED_IP}/32`, "dev", "lo"]],
      ["node", ["route", "add", `${UNALLOCATED_IP}/32`, "dev", "ext0"]],
    ] as const
  ) {
    const r = await topo.exec(ns, "ip", [...args]);
    assert.equal(r.code, 0, r.stderr);
  }
}

Deno.test("e2e [nftables]: traffic to unallocated ClusterIPs of a ServiceCIDR is dropped, unused ports rejected", async () => {
  await withProxy({
    prefix: "scdrop",
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "client", ip: CLIENT }],
    requireCommands: ["nft"],
    state: cluster(true),
    args: ["--proxy-mode=nftables"],
  }, async ({ topo, dir }) => {
    await routeUnallocatedToExternal(topo);
    await eventually(
      "the ServiceCIDR drop rule",
      5000,
      async () => (await clusterIPsCheck(topo)).includes("Drop traffic to unallocated ClusterIPs"),
    );
    assert.match(await clusterIPsCheck(topo), /ip daddr 172\.30\.0\.0\/16 drop/);
    assert.deepEqual(await outcome(topo, "172.30.0.10:80"), ["pod-a"]);
    assert.deepEqual(await outcome(topo, "172.30.0.10:81"), ["error:refused"]);
    assert.deepEqual(await outcome(topo, UNALLOCATED), ["error:timeout"]);

    // Without a ServiceCIDR the rule goes, and the packet reaches the external namespace.
    await dir.write("cluster.json", cluster(false));
    await eventually(
      "the drop rule to go",
      5000,
      async () => !(await clusterIPsCheck(topo)).includes("unallocated"),
    );
    assert.deepEqual(await outcome(topo, UNALLOCATED), ["error:refused"]);
    // One probe: the kernel rate-limits the ICMP errors `reject` sends to one host.
    assert.deepEqual(await outcome(topo, "172.30.0.10:81", 1), ["error:refused"]);
  });
});
