/**
 * Flags whose effect is on the node or the filesystem, run as operators run the program: main.ts
 * under the project's permission set (`deno run -P=proxy`). `--init-only` in a fresh node
 * namespace sets the sysctls and leaves no rules and no listening socket behind; with
 * `--write-config-to`, the permission set writes only under /var/lib/kube-proxy and any other
 * path exits 1 naming the permission entry.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { REPO_ROOT } from "../../scripts/netns/mod.ts";
import { WRITE_CONFIG_DIR } from "../../lib/app/commands.ts";
import { runMain, runProxyOnce } from "./support/proxy_process.ts";
import { withTopology } from "./support/with_topology.ts";

Deno.test("e2e: --init-only sets the node's sysctls, then exits 0 with no rules and no listener", async () => {
  await withTopology(
    { prefix: "fginit", ipv6: false, pods: [], flavour: "legacy", requireCommands: ["nft", "ss"] },
    async ({ topo }) => {
      const get = async (name: string) =>
        (await topo.exec("node", "sysctl", ["-n", name])).stdout.trim();
      await topo.exec("node", "sysctl", ["-w", "net.ipv4.conf.all.route_localnet=0"]);
      // No API server and no manifests: the set-up needs neither.
      const out = await runProxyOnce(topo, [
        "--init-only",
        "--hostname-override=node1",
        "--kubeconfig=/nonexistent",
        "--conntrack-tcp-timeout-established=2h",
        "--conntrack-tcp-timeout-close-wait=7m",
        "--conntrack-udp-timeout=45s",
        "--conntrack-tcp-be-liberal",
        "-v=2",
      ]);
      assert.equal(out.code, 0, out.stderr);
      assert.match(out.stderr, /System initialized and --init-only specified/);
      assert.equal(await get("net.netfilter.nf_conntrack_tcp_timeout_established"), "7200");
      assert.equal(await get("net.netfilter.nf_conntrack_tcp_timeout_close_wait"), "420");
      assert.equal(await get("net.netfilter.nf_conntrack_udp_timeout"), "45");
      assert.equal(await get("net.netfilter.nf_conntrack_tcp_be_liberal"), "1");
      assert.equal(await get("net.ipv4.conf.all.route_localnet"), "1", "localhost NodePorts");

      // Nothing else: no KUBE- chain in either iptables, no nftables table, no listener.
      for (const save of ["iptables-legacy-save", "iptables-nft-save"]) {
        const rules = await topo.exec("node", save, []);
        assert.doesNotMatch(rules.stdout, /KUBE-/, `${save}: ${rules.stdout}`);
      }
      const tables = await topo.exec("node", "nft", ["list", "tables"]);
      assert.doesNotMatch(tables.stdout, /kube-proxy/);
      const listening = await topo.exec("node", "ss", ["-Htuln"]);
      assert.equal(listening.stdout.trim(), "", "no healthz, metrics or health check server");
    },
  );
});

Deno.test("e2e: --write-config-to writes under /var/lib/kube-proxy with the proxy's permission set", async () => {
  const created = await Deno.mkdir(WRITE_CONFIG_DIR).then(() => true, () => false);
  const path = `${WRITE_CONFIG_DIR}/fgwrite-${Date.now()}.yaml`;
  try {
    const w = await runMain([`--write-config-to=${path}`, "--iptables-sync-period=45s"]);
    assert.equal(w.code, 0, w.stderr);
    const doc = parse(await Deno.readTextFile(path));
    assert.equal(doc.kind, "KubeProxyConfiguration");
    assert.equal(doc.iptables.syncPeriod, "45s");
    // The written file is readable under the same set and works as --config.
    const render = await runMain([
      `--config=${path}`,
      "render",
      `--manifests=${REPO_ROOT}deploy/examples`,
      "--hostname-override=node1",
    ]);
    assert.equal(render.code, 0, render.stderr);
    assert.match(render.stdout, /KUBE-SERVICES/);
  } finally {
    await Deno.remove(path).catch(() => {});
    if (created) await Deno.remove(WRITE_CONFIG_DIR).catch(() => {});
  }
});

Deno.test("e2e: --write-config-to outside the permission set exits 1 naming the entry, writing nothing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const w = await runMain([`--write-config-to=${dir}/kp.yaml`]);
    assert.equal(w.code, 1, w.stderr);
    // The logger quotes the message, escaping its quotes.
    assert.match(
      w.stderr.replaceAll('\\"', '"'),
      /Cannot write --write-config-to ".*kp\.yaml": the "proxy" permission set allows writing only under \/var\/lib\/kube-proxy \(deno\.json permissions\.proxy\.write\)/,
    );
    assert.doesNotMatch(w.stderr, /^\s+at /m, "no stack trace");
    assert.deepEqual([...Deno.readDirSync(dir)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
