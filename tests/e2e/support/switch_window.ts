/**
 * One window of switch traffic: switch_traffic.ts run from the client pod while an action runs,
 * its attempts counted from the action's start, the UDP flow's conntrack id around it, and the
 * one UDP exchange IPVS mode's virtual-server deletion may cost (lib/backends/ipvs/leftovers.ts).
 */
import assert from "node:assert/strict";
import { scaledMs, synRetransmits, type Topology } from "../../../scripts/netns/mod.ts";
import { eventually } from "./proxy_process.ts";
import {
  countTraffic,
  type TrafficAttempt,
  type TrafficCounts,
  type TrafficReport,
} from "./switch_traffic.ts";

/** The client pod's address, where switch_traffic.ts runs. */
export const SWITCH_CLIENT_IP = "10.0.3.2";
const TRAFFIC = decodeURIComponent(new URL("./switch_traffic.ts", import.meta.url).pathname);

/** The id of the UDP flow from the client's `sourcePort`, or null when there is none. */
export async function udpFlowId(topo: Topology, sourcePort: number): Promise<string | null> {
  const out = await topo.exec("node", "conntrack", [
    "-L",
    "-p",
    "udp",
    "--orig-src",
    SWITCH_CLIENT_IP,
    "--sport",
    String(sourcePort),
    "-o",
    "id",
  ]);
  return /\bid=(\d+)/.exec(out.stdout)?.[1] ?? null;
}

/** The traffic sent while one action ran, and the UDP flow's conntrack id around it. */
export interface TrafficWindow<T> {
  readonly value: T;
  readonly tcp: TrafficCounts;
  readonly udp: TrafficCounts;
  readonly flowBefore: string | null;
  readonly flowAfter: string | null;
  /**
   * SYNs the client pod's kernel sent again from the action's start until the client stopped
   * (scripts/netns/netstat.ts): connection attempts lost on the way and recovered.
   */
  readonly synRetransmits: number;
  /** What the client printed: every attempt, timed from its start. */
  readonly report: TrafficReport;
  /** When the action started (`Date.now()`). */
  readonly actionStartedEpochMs: number;
}

/** How long switch_traffic.ts waits for a UDP answer: half of its --timeout-ms. */
export const UDP_TIMEOUT_MS = scaledMs(1000) / 2;

/**
 * When the program logged that it had deleted IPVS mode's virtual servers (its klog header's
 * UTC time, in the year of `aroundMs`), or null when it did not.
 */
export function virtualServersDeletedAt(output: string, aroundMs: number): number | null {
  const m = /^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3})\d* "Deleted IPVS virtual servers"/m
    .exec(output);
  if (m === null) return null;
  const [month, day, h, min, sec, ms] = m.slice(1).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  return Date.UTC(new Date(aroundMs).getUTCFullYear(), month - 1, day, h, min, sec, ms);
}

/**
 * The window's one unanswered UDP exchange when it was sent at most `timeoutMs` before the
 * program logged the virtual servers' deletion (so still waiting then); otherwise undefined.
 */
export function answerLostAtDeletion(
  window: TrafficWindow<unknown>,
  output: string,
  timeoutMs: number,
): { readonly attempt: TrafficAttempt; readonly sentBeforeMs: number } | undefined {
  const lost = window.report.udp.filter((a) => !a.answer.ok);
  const deletedAt = virtualServersDeletedAt(output, window.report.startedEpochMs);
  if (lost.length !== 1 || deletedAt === null) return undefined;
  const sentBeforeMs = deletedAt - (window.report.startedEpochMs + lost[0]!.atMs);
  return sentBeforeMs >= 0 && sentBeforeMs <= timeoutMs
    ? { attempt: lost[0]!, sentBeforeMs }
    : undefined;
}

/**
 * The longest gap between answered attempts from the action's start, leaving out the one gap
 * around `lost` (the time its answer was waited for).
 */
export function longestGapAround(
  window: TrafficWindow<unknown>,
  attempts: readonly TrafficAttempt[],
  lost: TrafficAttempt,
): number {
  const from = window.actionStartedEpochMs - window.report.startedEpochMs;
  const ok = attempts.filter((a) => a.answer.ok && a.atMs >= from);
  const before = ok.filter((a) => a.atMs < lost.atMs);
  const after = ok.filter((a) => a.atMs > lost.atMs);
  return Math.max(countTraffic(before).maxGapMs, countTraffic(after).maxGapMs);
}

/**
 * Counts every attempt; the longest gap only among those started once the action had (before,
 * the client was starting up and warming its sockets, which is not what the action costs).
 */
function countWindow(
  report: TrafficReport,
  attempts: readonly TrafficAttempt[],
  fromEpochMs: number,
): TrafficCounts {
  const since = attempts.filter((a) => report.startedEpochMs + a.atMs >= fromEpochMs);
  return { ...countTraffic(attempts), maxGapMs: countTraffic(since).maxGapMs };
}

/**
 * Runs `action` while the client pod sends switch_traffic.ts's traffic (UDP from
 * `udpSourcePort`; TCP from the kernel's ephemeral ports, or from `tcpSourcePort` counting up,
 * one port per connection), and counts what was answered. The action starts once the UDP flow
 * has its conntrack entry. Attempts time out after 1 s times the time scale: the client shares
 * the node's CPU with whatever the action starts.
 */
export async function trafficDuring<T>(
  topo: Topology,
  label: string,
  udpSourcePort: number,
  action: () => Promise<T>,
  tcpSourcePort?: number,
): Promise<TrafficWindow<T>> {
  const traffic = topo.spawn("client", Deno.execPath(), [
    "run",
    "--no-config",
    "--allow-net",
    "--allow-ffi",
    TRAFFIC,
    "--tcp",
    "172.30.0.10:80",
    "--udp",
    "172.30.0.53:53",
    "--udp-source-port",
    String(udpSourcePort),
    "--timeout-ms",
    String(scaledMs(1000)),
    ...(tcpSourcePort === undefined ? [] : ["--tcp-source-port", String(tcpSourcePort)]),
  ], { label: `traffic ${label}` });
  await traffic.waitForOutput("traffic started", scaledMs(10_000));
  await eventually(
    "the UDP flow's conntrack entry",
    scaledMs(5000),
    async () => (await udpFlowId(topo, udpSourcePort)) !== null,
  );
  const flowBefore = await udpFlowId(topo, udpSourcePort);
  const synsBefore = await synRetransmits(topo, "client");
  const actionStartedEpochMs = Date.now();
  const value = await action();
  await traffic.kill(scaledMs(5000));
  const synsAfter = await synRetransmits(topo, "client");
  const line = traffic.output().split("\n").find((l) => l.startsWith("{"));
  assert.ok(line, `traffic report missing:\n${traffic.output()}`);
  const report = JSON.parse(line) as TrafficReport;
  return {
    value,
    report,
    actionStartedEpochMs,
    tcp: countWindow(report, report.tcp, actionStartedEpochMs),
    udp: countWindow(report, report.udp, actionStartedEpochMs),
    flowBefore,
    flowAfter: await udpFlowId(topo, udpSourcePort),
    synRetransmits: synsAfter - synsBefore,
  };
}
