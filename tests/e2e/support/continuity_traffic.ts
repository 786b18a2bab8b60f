/**
 * Steady traffic for the continuity tests, run inside a namespace; prints one JSON report when
 * its time is up. `udp`: one connected socket that keeps its source port sends a datagram every
 * `--interval-ms` and records every echo (who answered) and every ICMP error. `tcp`: opens a
 * connection to each `--to` every `--interval-ms` and records who answered or why not; with
 * `--source-ports FIRST-LAST` each connection binds the next port of that pool whose previous
 * connection has ended, so ports come back while the kernel still remembers their last flow.
 * SIGTERM ends the sending early (the report still comes, after the pending attempts).
 *
 *   deno run --allow-net --allow-ffi continuity_traffic.ts --proto udp --to 172.30.0.53:53 \
 *     --source-port 40053 --interval-ms 50 --duration-ms 8000 --start-at 1764355200000
 */
import { parseArgs } from "node:util";
import { parseEchoLine } from "../../../scripts/netns/echo_line.ts";
import { parseHostPort } from "../../../scripts/netns/host_port.ts";
import { ConnectedUdpSocket } from "../../../scripts/netns/libc_udp.ts";
import { tcpFromSourcePort } from "./continuity_libc_tcp.ts";

/** One outcome: when (ms since start), the target, and who answered or the error. */
export interface TrafficEvent {
  readonly t: number;
  readonly to: string;
  readonly name?: string;
  readonly error?: string;
}

/** What a run printed. */
export interface TrafficReport {
  readonly sent: number;
  /** Ticks with no source port free on the client, not sent (`--source-ports` only). */
  readonly skipped: number;
  /**
   * TCP attempts whose connect() failed at once in the client (no packet left it), by error;
   * not counted as sent (see continuity_libc_tcp.ts).
   */
  readonly unsent?: Readonly<Record<string, number>>;
  /** UDP: when each datagram went out (ms since start), for counting answers per window. */
  readonly sends?: number[];
  /** From the first send to the last (ms): sent / sendingMs is the rate the client kept. */
  readonly sendingMs: number;
  readonly events: TrafficEvent[];
}

const { values } = parseArgs({
  options: {
    proto: { type: "string" },
    to: { type: "string", multiple: true },
    "source-port": { type: "string" },
    "interval-ms": { type: "string", default: "50" },
    "duration-ms": { type: "string", default: "5000" },
    /** How long a TCP attempt may take before it counts as a timeout. */
    "timeout-ms": { type: "string", default: "2000" },
    /** `FIRST-LAST`: the TCP source ports to cycle through. */
    "source-ports": { type: "string" },
    /** Wall-clock time (ms since the epoch) to begin at, so the test and the report share t=0. */
    "start-at": { type: "string" },
  },
});
const interval = Number(values["interval-ms"]);
const duration = Number(values["duration-ms"]);
const timeoutMs = Number(values["timeout-ms"]);
const targets = values.to ?? [];
const start = Number(values["start-at"] ?? Date.now());
let stopped = false;
Deno.addSignalListener("SIGTERM", () => stopped = true);
if (start > Date.now()) await new Promise((r) => setTimeout(r, start - Date.now()));
const events: TrafficEvent[] = [];
const sends: number[] = [];
let sent = 0, skipped = 0, lastSend = 0;
const unsent: Record<string, number> = {};
const decoder = new TextDecoder();

async function udp(): Promise<void> {
  const to = targets[0]!;
  const opened = ConnectedUdpSocket.open(parseHostPort(to), Number(values["source-port"]));
  if (!opened.ok) throw new Error(`Cannot open a UDP socket to "${to}": errno ${opened.errno}`);
  const sock = opened.value;
  const payload = new TextEncoder().encode("probe\n");
  for (let tick = 0; tick * interval < duration && !stopped; tick++) {
    const s = sock.send(payload);
    sent++;
    lastSend = Date.now() - start;
    sends.push(lastSend);
    if (!s.ok) events.push({ t: Date.now() - start, to, error: `errno ${s.errno}` });
    const until = start + (tick + 1) * interval;
    while (Date.now() < until) {
      const got = await sock.receive(Math.max(1, until - Date.now()));
      if (!got.ok) events.push({ t: Date.now() - start, to, error: `errno ${got.errno}` });
      else if (got.value === null) break;
      else {
        const line = parseEchoLine(decoder.decode(got.value));
        events.push({ t: Date.now() - start, to, name: line?.name ?? "?" });
      }
    }
  }
  sock.close();
}

/** How long Linux keeps a closed TCP socket in TIME_WAIT (TCP_TIMEWAIT_LEN), and a margin. */
const CLIENT_TIME_WAIT_MS = 61_000;

/** The source port pool: `next()` hands out the next port whose last connection ended. */
function sourcePorts(range: string | undefined) {
  if (range === undefined) return null;
  const m = /^(\d+)-(\d+)$/.exec(range);
  const [first, last] = [Number(m?.[1]), Number(m?.[2])];
  if (!m || !(first >= 1024 && last <= 65535 && first <= last)) {
    throw new Error(`Invalid --source-ports "${range}": expected FIRST-LAST such as "41000-41099"`);
  }
  /** Ports in use, with when they come free (Infinity while their connection is open). */
  const busy = new Map<number, number>();
  let at = first;
  return {
    next(): number | null {
      const now = Date.now();
      for (let i = 0; i <= last - first; i++) {
        const port = at;
        at = at === last ? first : at + 1;
        if ((busy.get(port) ?? 0) <= now) {
          busy.set(port, Infinity);
          return port;
        }
      }
      return null;
    },
    /** A port the client closed first sits in the client's own TIME_WAIT (60 s on Linux). */
    release: (port: number, closedFirst: boolean) =>
      busy.set(port, closedFirst ? Date.now() + CLIENT_TIME_WAIT_MS : 0),
  };
}

async function tcp(): Promise<void> {
  const pending: Promise<void>[] = [];
  const pool = sourcePorts(values["source-ports"]);
  for (let tick = 0; tick * interval < duration && !stopped; tick++) {
    for (const to of targets) {
      sent++;
      const t = Date.now() - start;
      lastSend = t;
      const dest = parseHostPort(to);
      const port = pool?.next() ?? null;
      if (pool !== null && port === null) {
        // Every port's last connection is still open on the client: the client is the limit.
        sent--;
        skipped++;
        continue;
      }
      const attempt = tcpFromSourcePort(dest, port ?? 0, timeoutMs).then((a) => {
        if (port !== null) pool?.release(port, a.closedFirst);
        return a;
      });
      pending.push(
        attempt.then((a) => {
          if (!a.ok && a.notSent) {
            sent--;
            if (a.notSent === "local error") unsent[a.error] = (unsent[a.error] ?? 0) + 1;
            else skipped++;
          } else events.push(a.ok ? { t, to, name: a.name } : { t, to, error: a.error });
        }),
      );
    }
    const wait = start + (tick + 1) * interval - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  await Promise.all(pending);
}

await (values.proto === "tcp" ? tcp() : udp());
events.sort((a, b) => a.t - b.t);
console.log(JSON.stringify(
  {
    sent,
    skipped,
    ...(Object.keys(unsent).length > 0 ? { unsent } : {}),
    sendingMs: lastSend,
    events,
    ...(values.proto === "tcp" ? {} : { sends }),
  } satisfies TrafficReport,
));
// The SIGTERM listener would keep the process waiting.
Deno.exit(0);
