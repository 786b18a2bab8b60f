/**
 * `--cleanup` and the leftovers pass at start remove kube-proxy's state only: other programs'
 * iptables chains (even `KUBE-`-named ones such as kube-router's, and kubelet's KUBE-FIREWALL
 * and markers), the jumps into them, their nftables tables (even one named like ours in another
 * family or with another name) and their ipsets (even `KUBE-`-named ones) survive unchanged,
 * in both iptables flavours. Namespaces `sw3*`. Needs root, iptables (legacy and nft), nft,
 * and ipset; fails loudly without them.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import type { Topology } from "../../scripts/netns/mod.ts";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { eventually, type ManifestDir, runProxyOnce, startProxy } from "./support/proxy_process.ts";
import { withTopology } from "./support/with_topology.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];
const FLAGS = ["--hostname-override=node1", "--cluster-cidr=10.0.0.0/8"];
const FLAVOURS = ["legacy", "nft"] as const;

/** Another agent's iptables state: KUBE- chains that are not kube-proxy's, and kubelet's. */
const FOREIGN_IPTABLES = [
  "*nat",
  ":KUBE-FOO-OTHER - [0:0]",
  "-A PREROUTING -s 10.9.0.0/16 -j KUBE-FOO-OTHER",
  "-A KUBE-FOO-OTHER -d 10.9.9.9/32 -j RETURN",
  "COMMIT",
  "*filter",
  ":KUBE-ROUTER-INPUT - [0:0]",
  ":KUBE-POD-FW-ABCDEFGH - [0:0]",
  ":KUBE-FIREWALL - [0:0]",
  "-A INPUT -j KUBE-ROUTER-INPUT",
  "-A KUBE-ROUTER-INPUT -s 10.9.0.0/16 -j KUBE-POD-FW-ABCDEFGH",
  "-A KUBE-POD-FW-ABCDEFGH -j ACCEPT",
  "-A INPUT -j KUBE-FIREWALL",
  "-A KUBE-FIREWALL -d 127.0.0.0/8 ! -s 127.0.0.0/8 -j DROP",
  "COMMIT",
  "*mangle",
  ":KUBE-KUBELET-CANARY - [0:0]",
  "COMMIT",
  "",
].join("\n");

const FOREIGN_NFT = [
  "add table inet cu-firewall",
  "add chain inet cu-firewall input { type filter hook input priority 0 ; }",
  "add table ip kube-proxy-other",
  "add table inet kube-proxy",
  "",
].join("\n");

const FOREIGN_SETS = ["cu-allowlist", "KUBE-FOO-OTHER-SET"];

async function mustExec(topo: Topology, cmd: string, args: string[], stdin?: string) {
  const out = await topo.exec("node", cmd, args, stdin === undefined ? {} : { stdin });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

async function seedForeign(topo: Topology): Promise<void> {
  for (const flavour of FLAVOURS) {
    await mustExec(topo, `iptables-${flavour}-restore`, ["--noflush"], FOREIGN_IPTABLES);
  }
  await mustExec(topo, "nft", ["-f", "-"], FOREIGN_NFT);
  await mustExec(
    topo,
    "ipset",
    ["-exist", "restore"],
    FOREIGN_SETS.map((s) => `create ${s} hash:net\n`).join(""),
  );
}

/** Leaves what each mode of ours would: iptables rules (both flavours), nft tables, an ipset. */
async function seedOurs(topo: Topology, dir: ManifestDir): Promise<void> {
  const render = await runProxyOnce(topo, [
    "render",
    "--proxy-mode=iptables",
    `--manifests=${dir.path}`,
    ...FLAGS,
  ]);
  assert.equal(render.code, 0, render.stderr);
  // Without the copy of kubelet's KUBE-FIREWALL, so kubelet's own stays as seeded.
  const rules = render.stdout.split("\n").filter((l) => !l.includes("KUBE-FIREWALL")).join("\n");
  for (const flavour of FLAVOURS) {
    await mustExec(topo, `iptables-${flavour}-restore`, ["--noflush"], rules);
  }
  await mustExec(
    topo,
    "nft",
    ["-f", "-"],
    "add table ip kube-proxy\nadd chain ip kube-proxy services\nadd table ip6 kube-proxy\n",
  );
  await mustExec(topo, "ipset", ["-exist", "create", "KUBE-CLUSTER-IP", "hash:ip,port"]);
}

/** Everything the node holds, as sorted lines, with counters zeroed. */
async function nodeState(topo: Topology): Promise<string[]> {
  const lines: string[] = [];
  for (const flavour of FLAVOURS) {
    let table = "";
    for (const l of (await mustExec(topo, `iptables-${flavour}-save`, [])).split("\n")) {
      if (l.startsWith("*")) table = l;
      if (l.startsWith(":") || l.startsWith("-A")) {
        lines.push(`${flavour} ${table} ${l.replace(/\[\d+:\d+\]/, "")}`);
      }
    }
  }
  for (const l of (await mustExec(topo, "nft", ["list", "tables"])).split("\n")) {
    if (l !== "") lines.push(l);
  }
  for (const l of (await mustExec(topo, "ipset", ["list", "-n"])).split("\n")) {
    if (l !== "") lines.push(`ipset ${l}`);
  }
  return lines.sort();
}

/** Lines that are kube-proxy's (its chains, the jumps into them, its tables and sets). */
function isOurs(line: string): boolean {
  return /KUBE-(SERVICES|EXTERNAL-SERVICES|NODEPORTS|POSTROUTING|MARK-MASQ|FORWARD|PROXY-FIREWALL|PROXY-CANARY|SVC-|SEP-)|table ip6? kube-proxy$|ipset KUBE-CLUSTER-IP$/
    .test(line);
}

Deno.test("e2e: --cleanup and the leftovers pass remove kube-proxy's state and leave every other program's", async () => {
  await withTopology({
    prefix: "sw3",
    ipv6: false,
    flavour: "nft",
    requireCommands: ["ipset"],
  }, async ({ topo, dir }) => {
    await dir.write(
      "cluster.json",
      list([
        node1(),
        service("demo", "web", "172.30.0.10", WEB),
        endpointSlice("demo", "web", ["10.0.1.2"], WEB),
      ]),
    );
    await seedForeign(topo);
    // The hint chain the program's flavour detection finds, as kubelet would make it.
    await mustExec(topo, "iptables-legacy", ["-t", "mangle", "-N", "KUBE-IPTABLES-HINT"]);
    const foreign = await nodeState(topo);
    assert.ok(foreign.some((l) => l.includes("KUBE-FOO-OTHER")), foreign.join("\n"));

    await seedOurs(topo, dir);
    assert.ok((await nodeState(topo)).some(isOurs), "seeded");
    const cleanup = await runProxyOnce(topo, ["--cleanup"]);
    assert.equal(cleanup.code, 0, cleanup.stderr);
    assert.deepEqual(await nodeState(topo), foreign, "--cleanup leaves exactly the others' state");

    // The leftovers pass of nftables mode (iptables and IPVS state), then of iptables mode
    // (the nftables tables).
    await seedOurs(topo, dir);
    const nftables = await startProxy(topo, [
      `--manifests=${dir.path}`,
      "--proxy-mode=nftables",
      ...FLAGS,
    ]);
    await eventually(
      "nftables mode removed the iptables leftovers",
      10_000,
      async () =>
        !(await nodeState(topo)).some((l) => / \*(nat|filter|mangle) /.test(l) && isOurs(l)),
    );
    await nftables.kill();
    const iptables = await startProxy(topo, [
      `--manifests=${dir.path}`,
      "--proxy-mode=iptables",
      ...FLAGS,
    ], { label: "proxy iptables" });
    await eventually(
      "iptables mode removed the nftables tables",
      10_000,
      async () => !(await nodeState(topo)).some((l) => /^table ip6? kube-proxy$/.test(l)),
    );
    await iptables.kill();
    // Everything of the others' is still there. (The iptables mode that ran found kubelet's
    // canary in nft's mangle table, so it wrote its rules, and its copy of kubelet's
    // KUBE-FIREWALL rule, with iptables-nft.)
    const after = await nodeState(topo);
    const kubeletFirewallRule = / -A KUBE-FIREWALL /;
    for (const l of foreign.filter((l) => !kubeletFirewallRule.test(l))) {
      assert.ok(after.includes(l), `lost: ${l}`);
    }
    const legacyFirewall = foreign.filter((l) =>
      l.startsWith("legacy") && kubeletFirewallRule.test(l)
    );
    assert.equal(legacyFirewall.length, 1);
    assert.ok(after.includes(legacyFirewall[0]!), "kubelet's KUBE-FIREWALL rule where it ran");
    assert.ok(!after.includes("ipset KUBE-CLUSTER-IP"), "IPVS mode's set went with nftables mode");
  });
});
