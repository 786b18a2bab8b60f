/**
 * Runs INSIDE the IPVS guest (tests/e2e/ipvs_guest_test.ts boots it): the mode switches that
 * involve IPVS mode, with real packets, as tests/e2e/mode_switch_test.ts runs the others. While a
 * client pod opens a TCP connection to a ClusterIP every 20 ms and sends a UDP datagram every
 * 100 ms from one source port, the node goes from upstream's iptables rules (no program running)
 * to ipvs -> iptables -> ipvs -> nftables -> ipvs, on one topology. Each switch
 * loses no connection and no UDP exchange and ends with none of the old mode's state. On one
 * emulated vCPU a starting deno starves the client itself, so gaps are compared with a baseline
 * taken in the same run: the same traffic while the program starts and renders, changing no
 * rule; a switch may add at most 1 s to the baseline's longest gap. The UDP flow keeps its
 * conntrack entry when the old rules DNATed it; a flow IPVS carried has no NAT binding to keep,
 * so leaving IPVS mode replaces its entry and the flow goes on under the new one
 * (lib/backends/modes.ts, leftoverModes). Counts are printed. Namespaces `vw*`.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import {
  IPTABLES_JUMP_CHAINS,
  IPTABLES_MODE_CHAINS,
  isCleanupChain,
} from "../../lib/backends/iptables/mod.ts";
import {
  jumpMatches,
  type JumpRule,
  parseIptablesSave,
  ruleTarget,
} from "../../lib/netfilter/mod.ts";
import {
  IPVS_FILTER_CHAINS,
  IPVS_JUMP_CHAINS,
  IPVS_NAT_CHAINS,
} from "../../lib/backends/ipvs/mod.ts";
import { scaledMs, type SpawnedProcess, type Topology } from "../../scripts/netns/mod.ts";
import { E2E_MODES } from "../e2e/support/e2e_modes.ts";
import {
  kubeProxyTables,
  mustExec,
  PROGRAM_FLAGS,
  SWITCH_CLUSTER,
  SWITCH_PODS,
  switchUnderTraffic,
  trafficDuring,
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
    const render = () =>
      runProxyOnce(topo, [
        "render",
        "--proxy-mode=iptables",
        `--manifests=${dir.path}`,
        ...PROGRAM_FLAGS,
      ]);
    // On one emulated vCPU, deno start-ups overlap their waits.
    const [, upstream] = await Promise.all([
      topo.startEchoServers({ pods: ["pod-a", "pod-b"] }),
      render(),
    ]);
    assert.equal(upstream.code, 0, upstream.stderr);
    assert.match(upstream.stdout, /-j DNAT --to-destination 10\.0\.1\.2:8080/);
    // Upstream's iptables rules, no program running.
    await mustExec(topo, "iptables-legacy-restore", ["--noflush", "-w", "5"], upstream.stdout);

    // The baseline: traffic through upstream's rules while a deno runs the program (the same
    // render again) and no rule changes.
    const baseline = await trafficDuring(topo, "baseline", 40010, render);
    assert.equal(baseline.value.code, 0, baseline.value.stderr);
    const { tcp, udp } = baseline;
    console.log(
      `baseline (no switch): TCP ${tcp.attempts} connections, ${tcp.failed} failed, longest gap ` +
        `${tcp.maxGapMs} ms; UDP ${udp.attempts} exchanges, ${udp.failed} failed, longest gap ` +
        `${udp.maxGapMs} ms`,
    );
    assert.equal(tcp.failed + udp.failed, 0, "the baseline loses nothing");
    const common = {
      maxGapMs: Math.max(tcp.maxGapMs, udp.maxGapMs) + 1000,
      takeoverTimeoutMs: scaledMs(10_000),
    };

    const pairs = [
      ["upstream iptables rules", "ipvs", 40011],
      ["ipvs", "iptables", 40012],
      ["iptables", "ipvs", 40013],
      ["ipvs", "nftables", 40014],
      ["nftables", "ipvs", 40015],
    ] as const;
    let proxy: SpawnedProcess | null = null;
    for (const [from, to, udpSourcePort] of pairs) {
      const result = await switchUnderTraffic(topo, dir, {
        ...common,
        label: `${from} -> ${to}`,
        from: proxy,
        to,
        udpSourcePort,
        leftovers: leftoversFor(topo, to),
        sameFlow: from !== "ipvs",
      });
      proxy = result.proxy;
    }
    const stopped = await proxy?.kill();
    assert.equal(stopped?.code, 0, "the last program stops cleanly on SIGTERM");
  });
});
