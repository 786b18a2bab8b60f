/**
 * The program under steady churn: started in a startup lab (bench/proxy_startup.ts), settled,
 * then one EndpointSlice changed every `gapMs` (a new address for its first endpoint), each
 * change waited for until its sync completes. Reports the process's resident memory and its
 * high-water mark at the end, and the CPU the program itself used meanwhile (its children, the
 * restores, apart). Relies only on the program's stable CLI and log lines.
 */
import { benchSlice } from "./api_objects.ts";
import { cpuSplitMs, memory, spawnLabProxy, type StartupLab } from "./proxy_startup.ts";
import type { KubeObject } from "../tests/support/api_server/mod.ts";

/** What one churn run measured. */
export interface ChurnFigures {
  /** How many changes were made. */
  readonly changes: number;
  /** Median of change → its "SyncProxyRules complete", ms. */
  readonly medianLatencyMs: number;
  /** CPU of the program itself (utime + stime) over the changes, ms. */
  readonly ownCpuMs: number;
  /** CPU of its waited-for children (the restores) over the changes, ms. */
  readonly childrenCpuMs: number;
  /** VmRSS at the end, kB. */
  readonly rssKb: number;
  /** VmHWM at the end (start-up included; the kernel updates it lazily, so at least churnPeakRssKb), kB. */
  readonly peakRssKb: number;
  /** The highest VmRSS seen after start-up (sampled after each sync), kB. */
  readonly churnPeakRssKb: number;
}

const COMPLETE = "SyncProxyRules complete";

/** Endpoint addresses no bench slice uses (bench slices use 10.0-3.x.x at 10,000 services). */
function churnAddress(k: number): string {
  return `10.200.${(k >> 8) & 255}.${k & 255}`;
}

/**
 * Starts the program, waits `settleMs` after its first sync, makes `changes` changes `gapMs`
 * apart (spread over the lab's services), and stops it.
 */
export async function churnOnce(
  lab: StartupLab,
  changes: number,
  gapMs = 1_100,
  settleMs = 3_000,
  timeoutMs = 120_000,
): Promise<ChurnFigures> {
  const proc = spawnLabProxy(lab);
  try {
    await proc.waitForOutput(new RegExp(COMPLETE), timeoutMs);
    await new Promise((r) => setTimeout(r, settleMs));
    const [own0, children0] = cpuSplitMs(proc.pid);
    const latencies: number[] = [];
    let churnPeakRssKb = 0;
    for (let k = 0; k < changes; k++) {
      const from = proc.output().length;
      const slice = benchSlice((k * 37) % lab.services) as KubeObject & {
        endpoints: { addresses: string[] }[];
      };
      slice.endpoints[0]!.addresses = [churnAddress(k)];
      const t = performance.now();
      lab.server.update(slice);
      while (proc.output().indexOf(COMPLETE, from) === -1) {
        if (performance.now() - t > timeoutMs) throw new Error(`change ${k} never synced`);
        await new Promise((r) => setTimeout(r, 2));
      }
      latencies.push(performance.now() - t);
      churnPeakRssKb = Math.max(churnPeakRssKb, memory(proc.pid).rss);
      await new Promise((r) => setTimeout(r, gapMs));
    }
    const [own1, children1] = cpuSplitMs(proc.pid);
    const { rss, hwm } = memory(proc.pid);
    churnPeakRssKb = Math.max(churnPeakRssKb, rss);
    latencies.sort((a, b) => a - b);
    return {
      changes,
      medianLatencyMs: latencies[latencies.length >> 1] ?? NaN,
      ownCpuMs: own1 - own0,
      childrenCpuMs: children1 - children0,
      rssKb: rss,
      peakRssKb: Math.max(hwm, churnPeakRssKb),
      churnPeakRssKb,
    };
  } catch (err) {
    console.error(proc.output().slice(-4000));
    throw err;
  } finally {
    await proc.kill(5_000);
  }
}
