/**
 * What the continuity tests share: the traffic processes (support/continuity_traffic.ts) and
 * their reading, the node's conntrack flows, and the services the cases use. `summary()` prints
 * a case's counts and, when CONTINUITY_REPORT names a file, appends them there as a JSON line
 * (bench/continuity_bench.ts reads it).
 */
import { parseConntrackList } from "../../../lib/conntrack/mod.ts";
import type { Topology } from "../../../scripts/netns/mod.ts";
import type { TestPort } from "./cluster_objects.ts";
import type { TrafficEvent, TrafficReport } from "./continuity_traffic.ts";

const TRAFFIC = decodeURIComponent(
  new URL("./continuity_traffic.ts", import.meta.url).pathname,
);
/** The modes the continuity cases run in (IPVS needs the qemu guest). */
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
/** One sync: --iptables-min-sync-period=1s plus the manifest watch and the apply. */
export const ONE_SYNC_MS = 2000;

/** How long the restart case's clients run; its steps take about 6 s. */
export const RESTART_TRAFFIC_MS = 10_000;

/** Waits `ms`. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Starts a traffic process in `from` that begins at `started`; `done()` waits for its report. */
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
  return {
    proc,
    async done(): Promise<TrafficReport> {
      await proc.status;
      const line = proc.output().trim().split("\n").filter((l) => l.startsWith("{")).at(-1);
      if (!line) throw new Error(`No traffic report: ${proc.output()}`);
      return JSON.parse(line) as TrafficReport;
    },
  };
}

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

/** Prints one case's counts (and appends them to $CONTINUITY_REPORT when it is set). */
export function summary(
  mode: string,
  what: string,
  r: TrafficReport,
  failed: number,
  /** null where the sender expects no answer (a one-way sender). */
  gap: number | null,
): void {
  const shown = gap === null ? "n/a (no answers by design)" : `${gap} ms`;
  console.log(`  ${what}: sent ${r.sent}, failed ${failed}, longest gap ${shown}`);
  const report = Deno.env.get("CONTINUITY_REPORT");
  if (report) {
    const row = { mode, case: what, sent: r.sent, failed, longestGapMs: gap };
    Deno.writeTextFileSync(report, JSON.stringify(row) + "\n", { append: true });
  }
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
