/**
 * A mode switch under traffic, shared by the host's mode-switch test and the IPVS guest's: the
 * cluster (a TCP service and a UDP service over pod-a and pod-b, a client pod), the rules
 * upstream's iptables mode writes, the readings of each mode's leftovers, and one switch with
 * its counts: a client opens a TCP connection every 20 ms and sends a UDP datagram every
 * 100 ms from one source port (switch_traffic.ts, counted by switch_window.ts) while the old
 * program is stopped with SIGTERM (its rules stay) and the new one starts; the counts are
 * printed and checked.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import type { SpawnedProcess, Topology } from "../../../scripts/netns/mod.ts";
import { leftoverModes, type ProxyModeName } from "../../../lib/backends/mod.ts";
import { KUBELET_OWNED_CHAINS } from "../../../lib/netfilter/mod.ts";
import { endpointSlice, list, node1, service, type TestPort } from "./cluster_objects.ts";
import { eventually, type ManifestDir, runProxyOnce, startProxy } from "./proxy_process.ts";
import type { TrafficCounts } from "./switch_traffic.ts";
import {
  answerLostAtDeletion,
  longestGapAround,
  SWITCH_CLIENT_IP,
  trafficDuring,
  UDP_TIMEOUT_MS,
} from "./switch_window.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];
const DNS: TestPort[] = [{ name: "dns", port: 53, targetPort: 8080, protocol: "UDP" }];
/** The pods: two endpoints and the client that sends the traffic. */
export const SWITCH_PODS = [
  { name: "pod-a", ip: "10.0.1.2" },
  { name: "pod-b", ip: "10.0.2.2" },
  { name: "client", ip: SWITCH_CLIENT_IP },
] as const;

/** The cluster every switch runs on: web (TCP 172.30.0.10:80) and dns (UDP 172.30.0.53:53). */
export const SWITCH_CLUSTER = list([
  node1(),
  service("demo", "web", "172.30.0.10", WEB),
  endpointSlice("demo", "web", [SWITCH_PODS[0].ip, SWITCH_PODS[1].ip], WEB),
  service("demo", "dns", "172.30.0.53", DNS),
  endpointSlice("demo", "dns", [SWITCH_PODS[0].ip, SWITCH_PODS[1].ip], DNS),
]);

/** The flags every program run here gets (besides startProxy's defaults). */
export const PROGRAM_FLAGS = ["--hostname-override=node1", "--cluster-cidr=10.0.0.0/8"];

/** Runs a command in the node namespace; a non-zero exit fails the test. */
export async function mustExec(topo: Topology, cmd: string, args: string[], stdin?: string) {
  const out = await topo.exec("node", cmd, args, stdin === undefined ? {} : { stdin });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

/** Writes the iptables rules upstream kube-proxy would hold for the cluster, with no program. */
export async function applyUpstreamRules(topo: Topology, dir: ManifestDir): Promise<void> {
  const render = await runProxyOnce(topo, [
    "render",
    "--proxy-mode=iptables",
    `--manifests=${dir.path}`,
    ...PROGRAM_FLAGS,
  ]);
  assert.equal(render.code, 0, render.stderr);
  assert.match(render.stdout, /-j DNAT --to-destination 10\.0\.1\.2:8080/);
  await mustExec(topo, "iptables-legacy-restore", ["--noflush", "-w", "5"], render.stdout);
}

/** Our iptables chains in these flavours, as "flavour table chain" (kubelet's left out). */
export async function iptablesChains(
  topo: Topology,
  flavours: readonly string[] = ["legacy", "nft"],
): Promise<string[]> {
  const found: string[] = [];
  for (const flavour of flavours) {
    let table = "";
    for (const line of (await mustExec(topo, `iptables-${flavour}-save`, [])).split("\n")) {
      if (line.startsWith("*")) table = line.slice(1);
      const chain = /^:(KUBE-\S+)/.exec(line)?.[1];
      if (chain && !KUBELET_OWNED_CHAINS.has(chain)) found.push(`${flavour} ${table} ${chain}`);
    }
  }
  return found;
}

/** The nftables `kube-proxy` tables, as `nft list tables` prints them. */
export async function kubeProxyTables(topo: Topology): Promise<string[]> {
  return (await mustExec(topo, "nft", ["list", "tables"])).split("\n")
    .filter((l) => / kube-proxy$/.test(l));
}

/** One switch. */
export interface Switch {
  readonly label: string;
  /** The program of the old mode, stopped with SIGTERM; null when no program runs. */
  readonly from: SpawnedProcess | null;
  readonly to: ProxyModeName;
  readonly udpSourcePort: number;
  /** The first of the TCP connections' source ports (see trafficDuring); default ephemeral. */
  readonly tcpSourcePort?: number;
  /** The old mode's leftovers (empty once it is clean). */
  readonly leftovers: () => Promise<string[]>;
  /** More flags for the new program. */
  readonly flags?: readonly string[];
  /**
   * Whether the UDP flow keeps its conntrack entry and endpoint. A flow IPVS carried cannot:
   * its entry has no NAT binding, so it is deleted and the next datagram makes a new one.
   */
  readonly sameFlow?: boolean;
  /**
   * The longest gap allowed between answered attempts, in ms; default 1000; null: gaps are
   * printed, not bounded. With every attempt answered, a TCP gap is the time the client went
   * without starting one (its attempts run side by side) and a UDP gap one exchange's round
   * trip plus that: the CPU the client and the servers got, not the rules. On the host, where
   * an attempt times out after 1 s, it bounds how long they went without it; on an emulated
   * vCPU shared with a starting program it is noise, and a lost SYN (recovered by its
   * retransmission well inside the guest's 5 s timeout) is caught by the SYN count instead.
   */
  readonly maxGapMs?: number | null;
  /** How long the new program may take until the leftovers are gone; default 10 s. */
  readonly takeoverTimeoutMs?: number;
}

/** What one switch measured. */
export interface SwitchResult {
  readonly proxy: SpawnedProcess;
  /** From SIGTERM to the old program until it exited (0 when no program ran). */
  readonly stoppedMs: number;
  /** From SIGTERM until the new program's first sync was applied. */
  readonly syncedMs: number;
  /** From SIGTERM until the old mode's leftovers were gone. */
  readonly takeoverMs: number;
  readonly tcp: TrafficCounts;
  readonly udp: TrafficCounts;
  readonly flowBefore: string | null;
  readonly flowAfter: string | null;
}

/** Switches the node to `sw.to` under traffic, prints the counts and checks them. */
export async function switchUnderTraffic(
  topo: Topology,
  dir: ManifestDir,
  sw: Switch,
): Promise<SwitchResult> {
  const window = await trafficDuring(topo, sw.label, sw.udpSourcePort, async () => {
    const switchStarted = performance.now();
    const since = () => Math.round(performance.now() - switchStarted);
    if (sw.from !== null) {
      const status = await sw.from.kill();
      assert.equal(status.code, 0, `the old program stops cleanly on SIGTERM`);
    }
    const stoppedMs = since();
    const proxy = await startProxy(topo, [
      `--manifests=${dir.path}`,
      `--proxy-mode=${sw.to}`,
      ...PROGRAM_FLAGS,
      ...(sw.flags ?? []),
    ], { label: `proxy ${sw.to} (${sw.label})` });
    const syncedMs = since();
    // The program says when its leftovers pass has done the last mode (one reading of the
    // kernel then, instead of a poll that would measure the readings as well).
    const last = leftoverModes(sw.to).at(-1);
    const timeoutMs = sw.takeoverTimeoutMs ?? 10_000;
    if (last !== undefined) {
      await proxy.waitForOutput(
        new RegExp(`(Cleaned up|Error cleaning up) leftover state" mode="${last}"`),
        timeoutMs,
      ).catch(async (err) => {
        // What the program still waits for (a command it runs) is the first thing to know.
        const ps = await topo.exec("node", "ps", ["-eo", "pid,ppid,etime,stat,args"]);
        console.error(`processes when ${sw.label} timed out:\n${ps.stdout}`);
        throw err;
      });
    }
    await eventually(
      `no leftover of the old mode after ${sw.label}`,
      timeoutMs,
      async () => (await sw.leftovers()).length === 0,
    );
    const takeoverMs = since();
    // Traffic goes on for a moment under the new mode alone.
    await new Promise((r) => setTimeout(r, 1000));
    return { proxy, stoppedMs, syncedMs, takeoverMs };
  }, sw.tcpSourcePort);
  const { proxy, stoppedMs, syncedMs, takeoverMs } = window.value;
  const { tcp, udp, flowBefore: before, flowAfter: after, synRetransmits } = window;
  console.log(
    `${sw.label}: takeover ${takeoverMs} ms (old program stopped ${stoppedMs} ms, new first ` +
      `sync ${syncedMs} ms); TCP ${tcp.attempts} connections, ${tcp.failed} ` +
      `failed, longest gap ${tcp.maxGapMs} ms, ${synRetransmits} SYN(s) sent again; UDP ` +
      `${udp.attempts} exchanges, ${udp.failed} failed, longest gap ${udp.maxGapMs} ms, ` +
      `answered by ${udp.answeredBy.join(",")}; conntrack id ${before} -> ${after}`,
  );
  const maxGap = sw.maxGapMs === undefined ? 1000 : sw.maxGapMs;
  // Leaving IPVS mode, the one UDP exchange that may go unanswered is one still waiting for
  // its answer when the virtual servers were deleted: IPVS then drops the flow's connection
  // entry, and the kernel with it the flow's conntrack entry, which by then is the new mode's
  // (docs/migrating.md), so an answer on its way is not translated back. Its gap is its own.
  const lostAtDeletion = sw.sameFlow ?? true
    ? undefined
    : answerLostAtDeletion(window, proxy.output(), UDP_TIMEOUT_MS);
  const udpGapMs = lostAtDeletion === undefined
    ? udp.maxGapMs
    : longestGapAround(window, window.report.udp, lostAtDeletion.attempt);
  if (lostAtDeletion !== undefined) {
    console.log(
      `${sw.label}: the UDP exchange sent ${lostAtDeletion.sentBeforeMs} ms before the program ` +
        `logged the virtual servers' deletion got no answer; longest gap otherwise ${udpGapMs} ms`,
    );
  }
  assert.ok(tcp.attempts >= 50, `too few TCP connections: ${tcp.attempts}`);
  assert.equal(tcp.failed, 0, `failed TCP connections: ${JSON.stringify(tcp.failures)}`);
  assert.equal(synRetransmits, 0, "no connection's SYN was lost and sent again");
  assert.equal(
    udp.failed - (lostAtDeletion === undefined ? 0 : 1),
    0,
    `failed UDP exchanges: ${JSON.stringify(udp.failures)}`,
  );
  if (maxGap !== null) {
    assert.ok(tcp.maxGapMs <= maxGap, `TCP gap ${tcp.maxGapMs} ms over ${maxGap} ms`);
    assert.ok(udpGapMs <= maxGap, `UDP gap ${udpGapMs} ms over ${maxGap} ms`);
  }
  assert.deepEqual(tcp.answeredBy, ["pod-a", "pod-b"]);
  if (sw.sameFlow ?? true) {
    assert.equal(udp.answeredBy.length, 1, "the UDP flow stays with its endpoint");
    assert.equal(after, before, "the UDP flow keeps its conntrack entry");
  } else {
    // The entry IPVS carried is deleted; the flow's next datagram starts one the new mode
    // DNATs, and every exchange was answered (checked above).
    assert.notEqual(after, null, "the UDP flow has a conntrack entry");
    assert.notEqual(after, before, "the UDP flow IPVS carried has a new conntrack entry");
  }
  return {
    proxy,
    stoppedMs,
    syncedMs,
    takeoverMs,
    tcp,
    udp,
    flowBefore: before,
    flowAfter: after,
  };
}
