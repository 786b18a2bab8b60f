/**
 * The standard `process_*` metrics every Prometheus client exports (upstream kube-proxy gets
 * them from client_golang), registered on the registry passed in.
 *
 * Why not prom-client's collectDefaultMetrics: under the proxy's narrowed permissions Deno
 * refuses every read of /proc/self, so its memory and file-descriptor collectors silently report
 * 0, and its Node-only collectors report event-loop lag as NaN. Here each value comes from an API
 * Deno answers, and the /proc-based ones are registered only when /proc/<pid> is readable.
 */
import process from "node:process";
import { Counter, Gauge, type Registry } from "./prom.ts";

/** Where the process values come from; seams for tests. */
export interface ProcessSource {
  /** CPU time used so far, in microseconds. */
  cpuUsage(): { user: number; system: number };
  /** Resident set size in bytes. */
  rss(): number;
  /** Epoch seconds the process started. */
  readonly startTimeSeconds: number;
  /** Contents of /proc/<pid>/<file>, or null when it cannot be read. */
  procFile(file: "stat" | "limits"): string | null;
  /** Open file descriptors, or null when /proc/<pid>/fd cannot be read. */
  openFds(): number | null;
}

/** The real source: node:process, Deno.memoryUsage and /proc/<pid> when permitted. */
export function denoProcessSource(): ProcessSource {
  const dir = `/proc/${Deno.pid}`;
  const readable = (path: string) => Deno.permissions.querySync({ name: "read", path }).state;
  return {
    cpuUsage: () => process.cpuUsage(),
    rss: () => Deno.memoryUsage().rss,
    startTimeSeconds: Date.now() / 1000 - performance.now() / 1000,
    procFile: (file) => {
      if (readable(`${dir}/${file}`) !== "granted") return null;
      try {
        return Deno.readTextFileSync(`${dir}/${file}`);
      } catch {
        return null;
      }
    },
    openFds: () => {
      if (readable(`${dir}/fd`) !== "granted") return null;
      try {
        let n = 0;
        for (const _ of Deno.readDirSync(`${dir}/fd`)) n++;
        return n;
      } catch {
        return null;
      }
    },
  };
}

/** Field 23 (vsize, bytes) of /proc/<pid>/stat; the command name may contain spaces. */
export function virtualMemoryFromStat(stat: string): number | null {
  const rest = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // `rest` starts at field 3 (state), so vsize (field 23) is at index 20.
  const v = Number(rest[20]);
  return Number.isFinite(v) ? v : null;
}

/** The soft "Max open files" limit from /proc/<pid>/limits. */
export function maxFdsFromLimits(limits: string): number | null {
  const line = limits.split("\n").find((l) => l.startsWith("Max open files"));
  const v = Number(line?.slice("Max open files".length).trim().split(/\s+/)[0]);
  return Number.isFinite(v) ? v : null;
}

/** Registers the process metrics on `registry`; values are read at scrape time. */
export function registerProcessMetrics(
  registry: Registry,
  source: ProcessSource = denoProcessSource(),
): void {
  const registers = [registry];
  new Counter({
    name: "process_cpu_seconds_total",
    help: "Total user and system CPU time spent in seconds.",
    registers,
    collect() {
      const { user, system } = source.cpuUsage();
      this.reset();
      this.inc((user + system) / 1e6);
    },
  });
  new Gauge({
    name: "process_start_time_seconds",
    help: "Start time of the process since unix epoch in seconds.",
    registers,
    collect() {
      this.set(Math.floor(source.startTimeSeconds));
    },
  });
  new Gauge({
    name: "process_resident_memory_bytes",
    help: "Resident memory size in bytes.",
    registers,
    collect() {
      this.set(source.rss());
    },
  });
  const stat = source.procFile("stat");
  if (stat !== null && virtualMemoryFromStat(stat) !== null) {
    new Gauge({
      name: "process_virtual_memory_bytes",
      help: "Virtual memory size in bytes.",
      registers,
      collect() {
        const v = virtualMemoryFromStat(source.procFile("stat") ?? "");
        if (v !== null) this.set(v);
      },
    });
  }
  if (source.openFds() !== null) {
    new Gauge({
      name: "process_open_fds",
      help: "Number of open file descriptors.",
      registers,
      collect() {
        const n = source.openFds();
        if (n !== null) this.set(n);
      },
    });
  }
  const limits = source.procFile("limits");
  const maxFds = limits === null ? null : maxFdsFromLimits(limits);
  if (maxFds !== null) {
    new Gauge({
      name: "process_max_fds",
      help: "Maximum number of open file descriptors.",
      registers,
      collect() {
        this.set(maxFds);
      },
    });
  }
}
