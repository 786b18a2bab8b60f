/**
 * Runs INSIDE the IPVS guest (tests/e2e/ipvs_guest_test.ts boots it): IPVS mode's story of a
 * service over time, on one node and one proxy run to spare emulated start-ups — graceful
 * termination with a held TCP connection, a service updated and deleted, then `--cleanup`
 * after the proxy stopped. Named `*_guest.ts` so the host's `deno test` skips it.
 * IP plan: node 192.168.0.2, pods 10.0.1.2 / 10.0.2.2 / client 10.0.3.2, services
 * 172.30.0.0/16, external client 203.0.113.2.
 */
import assert from "node:assert/strict";
import { DRAIN_CHECK_INTERVAL_ENV } from "../../lib/backends/ipvs/drain_check_interval.ts";
import { scaledMs } from "../../scripts/netns/mod.ts";
import { dumpModeState, E2E_MODES } from "../e2e/support/e2e_modes.ts";
import { runProxyOnce, startProxy } from "../e2e/support/proxy_process.ts";
import { withTopology } from "../e2e/support/with_topology.ts";
import { ClusterState } from "./support/cluster_state.ts";
import { DRAIN_CHECK, gracefulTermination } from "./support/graceful_termination_case.ts";
import { ipsetNames, ipvsSave, kubeChains, kubeIpvs0Addresses } from "./support/ipvs_node.ts";
import { serviceLifecycle } from "./support/lifecycle_case.ts";
import { spawnLineEcho } from "./support/line_echo.ts";

/** kubelet's chain (the test harness plays kubelet); kube-proxy never owns it. */
const KUBELET_CHAINS = new Set(["KUBE-IPTABLES-HINT", "KUBE-KUBELET-CANARY"]);

Deno.test("guest [ipvs]: graceful termination, a service's lifecycle and --cleanup", async (t) => {
  const support = E2E_MODES.ipvs;
  await withTopology({
    prefix: "gtlife",
    ipv6: false,
    pods: [
      { name: "pod-a", ip: "10.0.1.2" },
      { name: "pod-b", ip: "10.0.2.2" },
      { name: "client", ip: "10.0.3.2" },
    ],
    requireCommands: support.commands,
  }, async ({ topo, dir }) => {
    const cluster = new ClusterState(dir);
    await cluster.publish();
    // Everything starts at once: on one emulated vCPU, deno start-ups overlap their waits. Only
    // pod-a and pod-b serve (one process each: held connections on HOLD_PORT, echo on 8080).
    const lineEcho = ["pod-a", "pod-b"].map((name) =>
      spawnLineEcho(topo, name, [8080], `echo ${name}`)
    );
    const [proxy] = await Promise.all([
      startProxy(topo, [`--manifests=${dir.path}`, "--proxy-mode=ipvs"], {
        env: { [DRAIN_CHECK_INTERVAL_ENV]: DRAIN_CHECK },
      }),
      ...lineEcho.map((p) => p.waitForOutput(/^ready$/m, scaledMs(20_000))),
    ]);
    const dumpOnFailure = (body: () => Promise<void>) => async () => {
      try {
        await body();
      } catch (err) {
        console.error(await dumpModeState(topo, support));
        throw err;
      }
    };

    await t.step(
      "a removed TCP real server drains while a held connection lives, then is deleted",
      dumpOnFailure(() => gracefulTermination(topo, cluster)),
    );
    await t.step(
      "virtual servers, kube-ipvs0, ipsets and traffic follow a service's updates and deletion",
      dumpOnFailure(() => serviceLifecycle(topo, cluster)),
    );

    await t.step(
      "--cleanup leaves no KUBE- ipset or chain, virtual server or kube-ipvs0",
      async () => {
        // Something to clean: a service with a NodePort-free ClusterIP is enough.
        const before = await ipsetNames(topo);
        assert.ok(before.some((n) => n.startsWith("KUBE-6-")), `IPv6 sets: ${before.join(" ")}`);
        assert.ok((await ipvsSave(topo)).length > 0, "virtual servers before --cleanup");
        const status = await proxy.kill();
        assert.equal(status.code, 0, `the proxy exits 0 on SIGTERM; output:\n${proxy.output()}`);
        const out = await runProxyOnce(topo, ["--cleanup", "-v=2"]);
        assert.equal(out.code, 0, `--cleanup exited ${out.code}: ${out.stderr}`);
        assert.deepEqual((await ipsetNames(topo)).filter((n) => n.startsWith("KUBE-")), []);
        const chains = (await kubeChains(topo)).filter((c) =>
          !KUBELET_CHAINS.has(c.slice(c.lastIndexOf(":") + 1))
        );
        assert.deepEqual(chains, []);
        assert.deepEqual(await ipvsSave(topo), []);
        assert.equal(await kubeIpvs0Addresses(topo), null, "kube-ipvs0 is deleted");
      },
    );
  });
});
