/**
 * Stale UDP conntrack entries are deleted after the rules change, so a client that keeps its
 * source port (as DNS resolvers do) reaches the new endpoint. Needs root.
 */
import assert from "node:assert/strict";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { eventually } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

const DNS: TestPort[] = [{ name: "dns", port: 53, targetPort: 8080, protocol: "UDP" }];

function dnsState(endpoints: string[]) {
  return list([
    node1(),
    service("demo", "dns", "172.30.0.53", DNS),
    endpointSlice("demo", "dns", endpoints, DNS),
  ]);
}

Deno.test("e2e: a UDP client reusing its source port reaches the new endpoint after the old one goes away", async () => {
  await withProxy({
    prefix: "kpct",
    ipv6: false,
    pods: [{ name: "pod-a", ip: "10.0.1.2" }, { name: "pod-b", ip: "10.0.2.2" }, {
      name: "client",
      ip: "10.0.3.2",
    }],
    state: dnsState(["10.0.1.2"]),
  }, async ({ topo, dir }) => {
    const probe = () =>
      topo.probe({
        from: "client",
        proto: "udp",
        to: "172.30.0.53:53",
        count: 3,
        sourcePort: 40053,
      });
    const before = await probe();
    assert.deepEqual(before.map((a) => a.ok && a.name), ["pod-a", "pod-a", "pod-a"]);
    const flows = await topo.exec("node", "conntrack", [
      "-L",
      "-p",
      "udp",
      "--orig-dst",
      "172.30.0.53",
    ]);
    assert.match(flows.stdout, /sport=40053/, "the client's flow is tracked");

    await dir.write("cluster.json", dnsState(["10.0.2.2"]));
    await eventually("the same client flow to reach pod-b", 5000, async () => {
      const now = await probe();
      return now.every((a) => a.ok && a.name === "pod-b");
    });
    assert.match(topo.logs(), /Deleted stale conntrack entries/);
  });
});
