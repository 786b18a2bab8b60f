/**
 * Runs INSIDE the IPVS guest (tests/e2e/ipvs_guest_test.ts boots it): the mode switches that
 * involve IPVS mode, with real packets, as tests/e2e/mode_switch_test.ts runs the others. While a
 * client pod opens a TCP connection to a ClusterIP every 20 ms and sends a UDP datagram every
 * 100 ms from one source port, the node goes from upstream's iptables rules (no program running)
 * to ipvs -> iptables -> ipvs -> nftables -> ipvs, on one topology. Each switch loses no
 * connection and ends with none of the old mode's state: no attempt fails within the scaled
 * 5 s timeout, and no SYN is lost and sent again. Gaps between answers are printed, not
 * bounded: on one emulated vCPU a starting deno starves the client and the servers, and with
 * every attempt answered a gap measures that (support/mode_switch.ts, maxGapMs). The UDP flow keeps its
 * conntrack entry when the old rules DNATed it; a flow IPVS carried has no NAT binding to keep,
 * so leaving IPVS mode replaces its entry and the flow goes on under the new one
 * (lib/backends/modes.ts, leftoverModes).
 *
 * When IPVS drops a connection entry (it ages out, or its virtual server goes), the kernel
 * deletes the conntrack entry with the same addresses and ports, whichever connection owns it
 * by then (docs/migrating.md). So each TCP connection has a source port never used before in
 * the file (the kernel's ephemeral ports come round again within IPVS's 2-minute TIME_WAIT, and
 * a newer connection from a reused port would be cut); the UDP flow keeps its port, and the one
 * exchange it may lose, leaving IPVS mode, is one still waiting for its answer when the virtual
 * servers are deleted (support/mode_switch.ts). Counts are printed. Namespaces `vw*`.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import {
  IPTABLES_JUMP_CHAINS,
  IPTABLES_MODE_CHAINS,
  isCleanupChain,
  jumpMatches,
  type JumpRule,
  parseIptablesSave,
  ruleTarget,
} from "../../lib/netfilter/mod.ts";
import {
  IPVS_FILTER_CHAINS,
  IPVS_JUMP_CHAINS,
  IPVS_NAT_CHAINS,
} from "../../lib/backends/ipvs/render_iptables.ts";
import { scaledMs, type SpawnedProcess, type Topology } from "../../scripts/netns/mod.ts";
import { E2E_MODES } from "../e2e/support/e2e_modes.ts";
import {
  kubeProxyTables,
  mustExec,
  PROGRAM_FLAGS,
  SWITCH_CLUSTER,
  SWITCH_PODS,
  switchUnderTraffic,
} from "../e2e/support/mode_switch.ts";
import { runProxyOnce } from "../e2e/support/proxy_process.ts";
import { withTopology } from "../e2e/support/with_topology.ts";
import { ipsetNames, ipvsSave, kubeIpvs0Addresses } from "./support/ipvs_node.ts";

/** The iptables state a mode writes: its chains by table (prefixed service chains or not). */
interface OwnIptables {
  readonly chains: Readonly<Record<string, readonly string[]>>;
  readonly servicePrefixes: boolean;
  readonly jumps: readonly JumpRule[];
}

const IPVS_OWN: OwnIptables = {
  chains: { nat: IPVS_NAT_CHAINS, filter: IPVS_FILTER_CHAINS },
  servicePrefixes: false,
  jumps: IPVS_JUMP_CHAINS,
};
const IPTABLES_OWN: OwnIptables = {
  chains: IPTABLES_MODE_CHAINS,
  servicePrefixes: true,
  jumps: IPTABLES_JUMP_CHAINS,
};
const NONE: OwnIptables = { chains: {}, servicePrefixes: false, jumps: [] };
const SERVICE_CHAIN = /^KUBE-(SVC|SVL|EXT|FW|SEP|XLB)-/;
/**
 * Each switch's TCP source ports: switch n takes PORTS_PER_WINDOW ports from FIRST_TCP_PORT +
 * n * PORTS_PER_WINDOW (below the kernel's ephemeral range), one connection every 20 ms for
 * 80 s at most.
 */
const FIRST_TCP_PORT = 8000;
const PORTS_PER_WINDOW = 4000;

/**
 * kube-proxy's iptables chains and jumps (legacy, both families) that a node running a mode
 * writing `own` should not hold: the old mode's, as "table chain" and "table -A rule".
 */
async function foreignIptables(topo: Topology, own: OwnIptables): Promise<string[]> {
  const found: string[] = [];
  for (const save of ["iptables-legacy-save", "ip6tables-legacy-save"]) {
    for (const table of parseIptablesSave(await mustExec(topo, save, [])).values()) {
      const ours = (chain: string) =>
        (own.chains[table.name] ?? []).includes(chain) ||
        (own.servicePrefixes && SERVICE_CHAIN.test(chain));
      for (const chain of table.chains.values()) {
        if (!chain.builtin && isCleanupChain(chain.name) && !ours(chain.name)) {
          found.push(`${save} ${table.name} ${chain.name}`);
        }
      }
      for (const rule of table.rules) {
        const target = ruleTarget(rule.spec);
        if (target === null || !isCleanupChain(target)) continue;
        if (!table.chains.get(rule.chain)?.builtin) continue;
        if (own.jumps.some((j) => j.table === table.name && jumpMatches(rule, target, j))) continue;
        found.push(`${save} ${table.name} -A ${rule.chain} ${rule.spec}`);
      }
    }
  }
  return found;
}

/** IPVS mode's state outside iptables: virtual servers, kube-ipvs0 and the KUBE- ipsets. */
async function ipvsState(topo: Topology): Promise<string[]> {
  const device = await kubeIpvs0Addresses(topo);
  return [
    ...(await ipvsSave(topo)),
    ...(device === null ? [] : [`kube-ipvs0 ${device.join(" ")}`]),
    ...(await ipsetNames(topo)).filter((n) => n.startsWith("KUBE-")),
  ];
}

/** What must be gone once the node runs `to` (IPVS state, other modes' rules and tables). */
function leftoversFor(topo: Topology, to: "iptables" | "ipvs" | "nftables") {
  return async () => [
    ...(to === "ipvs" ? [] : await ipvsState(topo)),
    ...(to === "nftables" ? [] : await kubeProxyTables(topo)),
    ...await foreignIptables(
      topo,
      to === "ipvs" ? IPVS_OWN : to === "iptables" ? IPTABLES_OWN : NONE,
    ),
  ];
}

Deno.test("guest: switches to and from IPVS mode lose no connection and leave no leftover", async () => {
  await withTopology({
    prefix: "vwsw",
    ipv6: false,
    pods: [...SWITCH_PODS],
    requireCommands: [...E2E_MODES.ipvs.commands, "nft", "conntrack"],
  }, async ({ topo, dir }) => {
    await dir.write("cluster.json", SWITCH_CLUSTER);
    // On one emulated vCPU, deno start-ups overlap their waits.
    const [, upstream] = await Promise.all([
      topo.startEchoServers({ pods: ["pod-a", "pod-b"] }),
      runProxyOnce(topo, [
        "render",
        "--proxy-mode=iptables",
        `--manifests=${dir.path}`,
        ...PROGRAM_FLAGS,
      ]),
    ]);
    assert.equal(upstream.code, 0, upstream.stderr);
    assert.match(upstream.stdout, /-j DNAT --to-destination 10\.0\.1\.2:8080/);
    // Upstream's iptables rules, no program running.
    await mustExec(topo, "iptables-legacy-restore", ["--noflush", "-w", "5"], upstream.stdout);

    const pairs = [
      ["upstream iptables rules", "ipvs", 40011],
      ["ipvs", "iptables", 40012],
      ["iptables", "ipvs", 40013],
      ["ipvs", "nftables", 40014],
      ["nftables", "ipvs", 40015],
    ] as const;
    let proxy: SpawnedProcess | null = null;
    for (const [i, [from, to, udpSourcePort]] of pairs.entries()) {
      const label = `${from} -> ${to}`;
      const result = await switchUnderTraffic(topo, dir, {
        label,
        from: proxy,
        to,
        udpSourcePort,
        tcpSourcePort: FIRST_TCP_PORT + i * PORTS_PER_WINDOW,
        leftovers: leftoversFor(topo, to),
        sameFlow: from !== "ipvs",
        takeoverTimeoutMs: scaledMs(10_000),
        maxGapMs: null,
      });
      assert.ok(result.tcp.attempts <= PORTS_PER_WINDOW, `${label} kept to its source ports`);
      proxy = result.proxy;
    }
    const stopped = await proxy?.kill();
    assert.equal(stopped?.code, 0, "the last program stops cleanly on SIGTERM");
  });
});
