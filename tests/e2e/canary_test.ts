/**
 * A firewall reload that flushes every table (`iptables -t TABLE -F; -X`) is noticed through the
 * missing KUBE-PROXY-CANARY chain of the mangle table (the only one read each syncPeriod, as
 * upstream's monitor does) and repaired by a full sync within syncPeriod. Needs root.
 */
import assert from "node:assert/strict";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { eventually } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];

Deno.test("e2e: rules flushed by a firewall reload are restored within syncPeriod and traffic flows again", async () => {
  const state = list([
    node1(),
    service("demo", "web", "172.30.0.10", WEB),
    endpointSlice("demo", "web", ["10.0.1.2"], WEB),
  ]);
  await withProxy({
    prefix: "kpcan",
    ipv6: false,
    pods: [{ name: "pod-a", ip: "10.0.1.2" }, { name: "client", ip: "10.0.3.2" }],
    state,
    args: ["--iptables-sync-period=2s"],
  }, async ({ topo }) => {
    const probe = () =>
      topo.probe({ from: "client", proto: "tcp", to: "172.30.0.10:80", count: 2, timeoutMs: 300 });
    assert.ok((await probe()).every((a) => a.ok && a.name === "pod-a"));

    for (const table of ["mangle", "nat", "filter"]) {
      for (const op of ["-F", "-X"]) {
        const out = await topo.exec("node", "iptables-legacy", ["-t", table, op]);
        assert.equal(out.code, 0, out.stderr);
      }
    }
    assert.ok((await probe()).every((a) => !a.ok), "traffic must stop once the rules are flushed");

    // syncPeriod (2 s) + 2 s.
    await eventually(
      "traffic to flow again",
      4000,
      async () => (await probe()).every((a) => a.ok && a.name === "pod-a"),
    );
    assert.match(topo.logs(), /Proxy rules were flushed; forcing a full resync/);
  });
});
