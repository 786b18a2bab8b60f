/**
 * What the continuity cases share: the traffic processes (support/continuity_traffic.ts) and
 * their reading, the node's conntrack flows, and the services the cases use. `summary()` prints
 * a case's counts and, when CONTINUITY_REPORT names a file, appends them there as a JSON line;
 * `CONTINUITY_REPORT=stdout` prints that line prefixed with CONTINUITY_ROW_PREFIX instead, for
 * the IPVS guest, whose files stay in the guest (bench/continuity_bench.ts reads both).
 */
import assert from "node:assert/strict";
import { parseConntrackList } from "../../../lib/conntrack/mod.ts";
import type { Topology } from "../../../scripts/netns/mod.ts";
import type { TestPort } from "./cluster_objects.ts";
import type { TrafficEvent, TrafficReport } from "./continuity_traffic.ts";

const TRAFFIC = decodeURIComponent(
  new URL("./continuity_traffic.ts", import.meta.url).pathname,
);
/** The modes the host's continuity tests run in (IPVS runs them in the qemu guest). */
export const MODES = [
  { mode: "iptables", tag: "i", commands: [] as string[] },
  { mode: "nftables", tag: "n", commands: ["nft"] },
] as const;

/** A UDP port answered by the echo servers. */
export const DNS: TestPort[] = [{ name: "dns", port: 53, targetPort: 8080, protocol: "UDP" }];
/** A UDP port whose answers the pods drop (see oneWaySink). */
export const SINK: TestPort[] = [{ name: "sink", port: 54, targetPort: 9999, protocol: "UDP" }];
/** The TCP port of a web service, as its EndpointSlice names it. */
export const WEB_SLICE: TestPort[] = [{
  name: "http",
  port: 80,
  targetPort: 8080,
  protocol: "TCP",
}];
/** The same port with a NodePort. */
export const WEB = [{
  name: "http",
  port: 80,
  targetPort: 8080,
  protocol: "TCP" as const,
  nodePort: 30080,
}];
/** Waits `ms`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts a traffic process in `from` that begins at `started`; `done()` waits for its report,
 * `stop()` ends its sending first (SIGTERM; its pending TCP attempts still finish).
 */
export function traffic(topo: Topology, from: string, started: number, args: string[]) {
  const proc = topo.spawn(from, Deno.execPath(), [
    "run",
    "--no-config",
    "--allow-net",
    "--allow-ffi",
    "--allow-read",
    TRAFFIC,
    "--start-at",
    String(started),
    ...args,
  ], { label: `traffic ${args.join(" ")}` });
  const report = async (): Promise<TrafficReport> => {
    await proc.status;
    const line = proc.output().trim().split("\n").filter((l) => l.startsWith("{")).at(-1);
    if (!line) throw new Error(`No traffic report: ${proc.output()}`);
    return JSON.parse(line) as TrafficReport;
  };
  return {
    proc,
    done: report,
    /** `graceMs` must cover the longest TCP attempt still pending. */
    async stop(graceMs: number): Promise<TrafficReport> {
      await proc.kill(graceMs);
      return await report();
    },
  };
}

/** The traffic process handle `traffic()` returns. */
export type Traffic = ReturnType<typeof traffic>;

/** The longest time without an answer between `from` and `to` (ms since the traffic began). */
export function longestGap(events: readonly TrafficEvent[], from = 0, to = Infinity): number {
  let last = from, gap = 0;
  for (const e of events) {
    if (!e.name || e.t < from || e.t > to) continue;
    gap = Math.max(gap, e.t - last);
    last = e.t;
  }
  return to === Infinity ? gap : Math.max(gap, to - last);
}

/** What prefixes a report row printed on stdout (CONTINUITY_REPORT=stdout). */
export const CONTINUITY_ROW_PREFIX = "continuity-row ";

/** One case's counts as the bench table shows them. */
export interface ContinuityRow {
  readonly mode: string;
  readonly case: string;
  readonly sent: number;
  readonly failed: number;
  readonly longestGapMs: number | null;
  /** The rate the client kept: sent per second of sending. */
  readonly perSecond: number;
}

/** How many events ended in each error, e.g. `timeout 2, refused 1`; "none" without errors. */
export function errorKinds(r: TrafficReport): string {
  const counts = new Map<string, number>();
  for (const e of r.events) if (e.error) counts.set(e.error, (counts.get(e.error) ?? 0) + 1);
  return counts.size === 0 ? "none" : [...counts].map(([k, n]) => `${k} ${n}`).join(", ");
}

/**
 * When the errors happened: runs of errors less than a second apart, as `1.2-3.4 s (40)`
 * (seconds since the traffic began, and how many), for telling a restart's window from noise.
 */
export function errorSpans(r: TrafficReport): string {
  const spans: { from: number; to: number; n: number }[] = [];
  for (const e of r.events) {
    if (!e.error) continue;
    const last = spans.at(-1);
    if (last && e.t - last.to < 1000) {
      last.to = e.t;
      last.n++;
    } else spans.push({ from: e.t, to: e.t, n: 1 });
  }
  const s = (ms: number) => (ms / 1000).toFixed(1);
  return spans.map((x) => `${s(x.from)}-${s(x.to)} s (${x.n})`).join(", ");
}

/**
 * Asserts that attempts whose connect() failed in the client (never sent, see
 * continuity_libc_tcp.ts) stay rare: at most one per hundred sent, so a broken client cannot
 * pass for a proxy that loses nothing.
 */
export function assertFewUnsent(r: TrafficReport, what: string): void {
  const unsent = Object.values(r.unsent ?? {}).reduce((a, b) => a + b, 0);
  assert.ok(unsent <= r.sent / 100, `${what}: ${unsent} of ${r.sent + unsent} attempts not sent`);
}

/** Prints one case's counts (and reports them as CONTINUITY_REPORT says, when it is set). */
export function summary(
  mode: string,
  what: string,
  r: TrafficReport,
  failed: number,
  /** null where the sender expects no answer (a one-way sender). */
  gap: number | null,
): void {
  const shown = gap === null ? "n/a (no answers by design)" : `${gap} ms`;
  const perSecond = r.sendingMs > 0 ? Math.round((r.sent - 1) * 1000 / r.sendingMs) : 0;
  const skipped = r.skipped > 0
    ? ` (${r.skipped} ticks skipped: no source port free on the client)`
    : "";
  const unsent = Object.entries(r.unsent ?? {}).map(([error, n]) => `${n} × ${error}`);
  const notSent = unsent.length > 0 ? `; not sent: ${unsent.join(", ")}` : "";
  console.log(
    `  ${what}: sent ${r.sent} (${perSecond}/s kept${skipped}), failed ${failed}, ` +
      `longest gap ${shown}; errors: ${errorKinds(r)}${notSent}`,
  );
  const spans = errorSpans(r);
  if (spans !== "") console.log(`    errors at ${spans}`);
  const report = Deno.env.get("CONTINUITY_REPORT");
  const row: ContinuityRow = {
    mode,
    case: what,
    sent: r.sent,
    failed,
    longestGapMs: gap,
    perSecond,
  };
  if (report === "stdout") console.log(CONTINUITY_ROW_PREFIX + JSON.stringify(row));
  else if (report) Deno.writeTextFileSync(report, JSON.stringify(row) + "\n", { append: true });
}

/** The UDP flows to `ip` in the node's conntrack table. */
export async function flowsTo(topo: Topology, ip: string) {
  const out = await topo.exec("node", "conntrack", ["-L", "-p", "udp", "--orig-dst", ip]);
  return parseConntrackList(out.stdout).entries;
}

/** Counts UDP packets arriving on `port` in a pod and drops its answers, for a one-way sender. */
export async function oneWaySink(
  topo: Topology,
  pod: string,
  port: number,
): Promise<() => Promise<number>> {
  await topo.exec(pod, "iptables-legacy", ["-A", "INPUT", "-p", "udp", "--dport", String(port)]);
  await topo.exec(pod, "iptables-legacy", [
    "-A",
    "OUTPUT",
    "-p",
    "udp",
    "--sport",
    String(port),
    "-j",
    "DROP",
  ]);
  return async () => {
    const out = await topo.exec(pod, "iptables-legacy", ["-L", "INPUT", "-v", "-x", "-n"]);
    const row = out.stdout.split("\n").find((l) => l.includes(`dpt:${port}`));
    return Number(row?.trim().split(/\s+/)[0] ?? NaN);
  };
}
