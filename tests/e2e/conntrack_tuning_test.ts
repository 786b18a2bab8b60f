/**
 * Conntrack tuning at start, in a real network namespace: the per-namespace knobs (TCP and UDP
 * timeouts) are set; nf_conntrack_max and the hash size belong to the initial namespace only,
 * so the proxy warns about them and carries on, leaving the host's values untouched.
 */
import assert from "node:assert/strict";
import { spawnProxy } from "../../scripts/netns/mod.ts";
import { list, node1 } from "./support/cluster_objects.ts";
import { requireRealKernel } from "./support/proxy_process.ts";
import { withTopology } from "./support/with_topology.ts";

async function hostSysctl(name: string): Promise<string> {
  const out = await new Deno.Command("sysctl", { args: ["-n", name] }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

Deno.test("e2e: conntrack timeouts are tuned in the node's namespace; global knobs warn", async () => {
  await requireRealKernel();
  const hostMax = await hostSysctl("net.netfilter.nf_conntrack_max");
  const hostEstablished = await hostSysctl("net.netfilter.nf_conntrack_tcp_timeout_established");
  await withTopology({ prefix: "hmct", ipv6: false, pods: [] }, async ({ topo, dir }) => {
    await dir.write("c.json", list([node1()]));
    const proxy = await spawnProxy(topo, [
      "--hostname-override=node1",
      `--manifests=${dir.path}`,
      "--healthz-bind-address=127.0.0.1:10256",
      "--metrics-bind-address=127.0.0.1:10249",
      // Far above the host's value, so the proxy must try to raise it.
      "--conntrack-max-per-core=4000000",
      "--conntrack-tcp-timeout-established=2h",
      "--conntrack-tcp-timeout-close-wait=7m",
      "--conntrack-udp-timeout=45s",
      "--conntrack-udp-timeout-stream=3m",
      "-v=2",
    ]);
    const get = async (name: string) =>
      (await topo.exec("node", "sysctl", ["-n", `net.netfilter.${name}`])).stdout.trim();
    assert.equal(await get("nf_conntrack_tcp_timeout_established"), "7200");
    assert.equal(await get("nf_conntrack_tcp_timeout_close_wait"), "420");
    assert.equal(await get("nf_conntrack_udp_timeout"), "45");
    assert.equal(await get("nf_conntrack_udp_timeout_stream"), "180");

    const out = proxy.output();
    assert.match(
      out,
      /^W.*"Could not set conntrack sysctl.*name="net\.netfilter\.nf_conntrack_max"/m,
    );
    assert.match(out, /^W.*"Could not set conntrack sysctl.*nf_conntrack_buckets/m);
    assert.match(out, /SyncProxyRules complete/, "the proxy carries on");
    assert.equal(await hostSysctl("net.netfilter.nf_conntrack_max"), hostMax);
    assert.equal(
      await hostSysctl("net.netfilter.nf_conntrack_tcp_timeout_established"),
      hostEstablished,
      "the host's own namespace is not touched",
    );
  });
});
