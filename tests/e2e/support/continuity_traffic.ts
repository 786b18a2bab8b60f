/**
 * Steady traffic for the continuity tests, run inside a namespace; prints one JSON report when
 * its time is up. `udp`: one connected socket that keeps its source port sends a datagram every
 * `--interval-ms` and records every echo (who answered) and every ICMP error. `tcp`: opens a
 * connection to each `--to` every `--interval-ms` and records who answered or why not.
 *
 *   deno run --allow-net --allow-ffi continuity_traffic.ts --proto udp --to 172.30.0.53:53 \
 *     --source-port 40053 --interval-ms 50 --duration-ms 8000 --start-at 1764355200000
 */
import { parseArgs } from "node:util";
import { parseEchoLine } from "../../../scripts/netns/echo_line.ts";
import { parseHostPort } from "../../../scripts/netns/host_port.ts";
import { ConnectedUdpSocket } from "../../../scripts/netns/libc_udp.ts";
import { tcpAttempt } from "../../../scripts/netns/tcp_probe.ts";

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
  readonly events: TrafficEvent[];
}

const { values } = parseArgs({
  options: {
    proto: { type: "string" },
    to: { type: "string", multiple: true },
    "source-port": { type: "string" },
    "interval-ms": { type: "string", default: "50" },
    "duration-ms": { type: "string", default: "5000" },
    /** Wall-clock time (ms since the epoch) to begin at, so the test and the report share t=0. */
    "start-at": { type: "string" },
  },
});
const interval = Number(values["interval-ms"]);
const duration = Number(values["duration-ms"]);
const targets = values.to ?? [];
const start = Number(values["start-at"] ?? Date.now());
if (start > Date.now()) await new Promise((r) => setTimeout(r, start - Date.now()));
const events: TrafficEvent[] = [];
let sent = 0;
const decoder = new TextDecoder();

async function udp(): Promise<void> {
  const to = targets[0]!;
  const opened = ConnectedUdpSocket.open(parseHostPort(to), Number(values["source-port"]));
  if (!opened.ok) throw new Error(`Cannot open a UDP socket to "${to}": errno ${opened.errno}`);
  const sock = opened.value;
  const payload = new TextEncoder().encode("probe\n");
  for (let tick = 0; tick * interval < duration; tick++) {
    const s = sock.send(payload);
    sent++;
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

async function tcp(): Promise<void> {
  const pending: Promise<void>[] = [];
  for (let tick = 0; tick * interval < duration; tick++) {
    for (const to of targets) {
      sent++;
      const t = Date.now() - start;
      pending.push(
        tcpAttempt(parseHostPort(to), 2000).then((a) => {
          events.push(a.ok ? { t, to, name: a.name } : { t, to, error: a.error });
        }),
      );
    }
    const wait = start + (tick + 1) * interval - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  }
  await Promise.all(pending);
}

await (values.proto === "tcp" ? tcp() : udp());
console.log(JSON.stringify({ sent, events } satisfies TrafficReport));
