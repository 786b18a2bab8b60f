/**
 * `--cleanup` on a real kernel removes the state of every mode: KUBE- iptables chains (legacy
 * and nft flavours), the nftables `kube-proxy` tables (ip and ip6), the IPVS device
 * `kube-ipvs0` and the KUBE- ipsets; it leaves other programs' tables and sets alone and exits
 * 0, also on a node where nothing is left. This kernel has no IPVS and no dummy driver, so a
 * bridge stands in for `kube-ipvs0` and the IPVS step finds nothing to clear.
 * Needs root, iptables (legacy and nft), nft, ipset and ipvsadm; fails loudly without them.
 * IP plan: node 192.168.0.2, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import { createTopology, requireCommands, type Topology } from "../../scripts/netns/mod.ts";
import { requireRealKernel, runProxyOnce } from "./support/proxy_process.ts";

const OUR_SETS = ["KUBE-CLUSTER-IP", "KUBE-6-CLUSTER-IP", "KUBE-NODE-PORT-TCP", "KUBE-LOOP-BACK"];
const FOREIGN_SET = "cu-allowlist";
const FOREIGN_TABLE = "inet cu-firewall";

/** Runs a command in the node namespace and fails the test when it fails. */
async function mustExec(topo: Topology, cmd: string, args: string[], stdin?: string) {
  const out = await topo.exec("node", cmd, args, stdin === undefined ? {} : { stdin });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

/** Leaves on the node what iptables, nftables and IPVS mode would, plus foreign state. */
async function seedEveryMode(topo: Topology): Promise<void> {
  await mustExec(
    topo,
    "nft",
    ["-f", "-"],
    [
      "add table ip kube-proxy",
      "add chain ip kube-proxy services",
      "add table ip6 kube-proxy",
      "add chain ip6 kube-proxy services",
      `add table ${FOREIGN_TABLE}`,
      `add chain ${FOREIGN_TABLE} input { type filter hook input priority 0 ; }`,
      "",
    ].join("\n"),
  );
  await mustExec(
    topo,
    "ipset",
    ["-exist", "restore"],
    [
      "create KUBE-CLUSTER-IP hash:ip,port",
      "create KUBE-6-CLUSTER-IP hash:ip,port family inet6",
      "create KUBE-NODE-PORT-TCP bitmap:port range 0-65535",
      "create KUBE-LOOP-BACK hash:ip,port,ip",
      "add KUBE-CLUSTER-IP 172.30.0.10,tcp:80",
      `create ${FOREIGN_SET} hash:net`,
      "",
    ].join("\n"),
  );
  // After the ipsets: an iptables rule can only match an existing set.
  for (const flavour of ["legacy", "nft"]) {
    await mustExec(
      topo,
      `iptables-${flavour}-restore`,
      ["--noflush"],
      "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-POSTROUTING - [0:0]\n" +
        '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES\n' +
        "-A POSTROUTING -j KUBE-POSTROUTING\n" +
        (flavour === "legacy"
          ? "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\n"
          : "") +
        "COMMIT\n",
    );
  }
  await mustExec(topo, "ip", ["link", "add", "kube-ipvs0", "type", "bridge"]);
  await mustExec(topo, "ip", ["addr", "add", "172.30.0.10/32", "dev", "kube-ipvs0"]);
}

async function ipsetNames(topo: Topology): Promise<string[]> {
  return (await mustExec(topo, "ipset", ["list", "-n"])).split("\n").filter((l) => l !== "");
}

async function nftTables(topo: Topology): Promise<string[]> {
  return (await mustExec(topo, "nft", ["list", "tables"])).split("\n").filter((l) => l !== "");
}

async function kubeChains(topo: Topology): Promise<string[]> {
  const lines: string[] = [];
  for (const cmd of ["iptables-legacy-save", "iptables-nft-save"]) {
    for (const l of (await mustExec(topo, cmd, [])).split("\n")) {
      if (/KUBE-/.test(l) && !/KUBE-(IPTABLES-HINT|KUBELET-CANARY)/.test(l)) lines.push(l);
    }
  }
  return lines;
}

async function hasLink(topo: Topology, name: string): Promise<boolean> {
  const links = JSON.parse(await mustExec(topo, "ip", ["-j", "link", "show"])) as {
    ifname: string;
  }[];
  return links.some((l) => l.ifname === name);
}

async function requireTools(): Promise<void> {
  await requireRealKernel("nft");
  requireCommands(["ipset", "ipvsadm"]);
}

Deno.test("e2e: --cleanup removes the iptables, nftables and IPVS state of every mode and exits 0", async () => {
  await requireTools();
  const topo = await createTopology({ prefix: "cu1", ipv6: false });
  try {
    await seedEveryMode(topo);
    assert.ok((await kubeChains(topo)).length > 0, "seeded KUBE chains");
    assert.ok(await hasLink(topo, "kube-ipvs0"), "seeded kube-ipvs0");
    assert.deepEqual((await ipsetNames(topo)).sort(), [...OUR_SETS, FOREIGN_SET].sort());

    const cleanup = await runProxyOnce(topo, ["--cleanup", "-v=2"]);
    assert.equal(cleanup.code, 0, cleanup.stderr);
    assert.match(cleanup.stderr, /IPVS not available/, "no IPVS here: nothing to clear, no error");

    assert.deepEqual(await kubeChains(topo), [], "iptables after --cleanup");
    assert.deepEqual(
      (await nftTables(topo)).filter((t) => t.includes("kube-proxy")),
      [],
      "nftables after --cleanup",
    );
    assert.ok((await nftTables(topo)).includes(`table ${FOREIGN_TABLE}`), "foreign table stays");
    assert.deepEqual(await ipsetNames(topo), [FOREIGN_SET], "only the foreign ipset stays");
    assert.equal(await hasLink(topo, "kube-ipvs0"), false, "kube-ipvs0 after --cleanup");

    const again = await runProxyOnce(topo, ["--cleanup"]);
    assert.equal(
      again.code,
      0,
      `a second --cleanup on a clean node also succeeds: ${again.stderr}`,
    );
  } finally {
    await topo.destroy();
  }
});

Deno.test("e2e: --cleanup exits 1 when a KUBE ipset is still in use, after cleaning the rest", async () => {
  await requireTools();
  const topo = await createTopology({ prefix: "cu2", ipv6: false });
  try {
    await seedEveryMode(topo);
    // Someone else's rule (not a jump into a KUBE chain) keeps one of our sets in use.
    const userRule = ["-I", "INPUT", "-m", "set", "--match-set", "KUBE-LOOP-BACK", "src", "-j"];
    await mustExec(topo, "iptables-legacy", [...userRule, "ACCEPT"]);

    const cleanup = await runProxyOnce(topo, ["--cleanup"]);
    assert.equal(cleanup.code, 1, cleanup.stderr);
    assert.match(cleanup.stderr, /KUBE-LOOP-BACK/);
    assert.deepEqual((await ipsetNames(topo)).sort(), ["KUBE-LOOP-BACK", FOREIGN_SET].sort());
    assert.equal(await hasLink(topo, "kube-ipvs0"), false);
    assert.deepEqual((await nftTables(topo)).filter((t) => t.includes("kube-proxy")), []);

    await mustExec(topo, "iptables-legacy", ["-D", "INPUT", ...userRule.slice(2), "ACCEPT"]);
    const again = await runProxyOnce(topo, ["--cleanup"]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(await ipsetNames(topo), [FOREIGN_SET]);
  } finally {
    await topo.destroy();
  }
});
