/**
 * Steady client traffic for the mode-switch tests, run inside a client namespace until
 * SIGTERM: a new TCP connection every `--tcp-interval-ms` (each reads the echo line) and one
 * UDP exchange every `--udp-interval-ms`, always from the same source port (one conntrack
 * flow). TCP connections take the kernel's ephemeral ports, or with `--tcp-source-port P` the
 * ports P, P+1, ... in turn, so that no connection reuses another's source port. A TCP attempt
 * fails after `--timeout-ms` (default 1000) without its echo, a UDP exchange after half of
 * that. On SIGTERM it waits for the attempts in flight and prints a TrafficReport as JSON.
 *
 *   deno run --no-config --allow-net --allow-ffi switch_traffic.ts --tcp 172.30.0.10:80 \
 *     --udp 172.30.0.53:53 --udp-source-port 40001
 */
import { connect } from "node:net";
import { parseArgs } from "node:util";
import { parseEchoLine } from "../../../scripts/netns/echo_line.ts";
import { type HostPort, parseHostPort } from "../../../scripts/netns/host_port.ts";
import type { ProbeAnswer } from "../../../scripts/netns/probe_types.ts";
import { classifyTcpError, tcpAttempt } from "../../../scripts/netns/tcp_probe.ts";
import { udpAttempt } from "../../../scripts/netns/udp_probe.ts";

/** One attempt: when it started (ms since the first) and what came back. */
export interface TrafficAttempt {
  readonly atMs: number;
  readonly answer: ProbeAnswer;
  /** The TCP source port, when the client chose it (`--tcp-source-port`). */
  readonly sourcePort?: number;
}

/** What switch_traffic.ts prints. */
export interface TrafficReport {
  /** When the first attempt started (`Date.now()`); every `atMs` counts from it. */
  readonly startedEpochMs: number;
  readonly tcp: readonly TrafficAttempt[];
  readonly udp: readonly TrafficAttempt[];
}

/** Counts of one protocol's attempts, for assertions and the printed summary. */
export interface TrafficCounts {
  readonly attempts: number;
  readonly failed: number;
  /** The longest time between two answered attempts (start to start), in ms. */
  readonly maxGapMs: number;
  /** Which endpoints answered. */
  readonly answeredBy: readonly string[];
  /** The failed attempts, for the failure message. */
  readonly failures: readonly TrafficAttempt[];
}

/** Summarises one protocol's attempts. */
export function countTraffic(attempts: readonly TrafficAttempt[]): TrafficCounts {
  const ok = attempts.filter((a) => a.answer.ok);
  let maxGapMs = 0;
  for (let i = 1; i < ok.length; i++) {
    maxGapMs = Math.max(maxGapMs, ok[i]!.atMs - ok[i - 1]!.atMs);
  }
  return {
    attempts: attempts.length,
    failed: attempts.length - ok.length,
    maxGapMs,
    answeredBy: [...new Set(ok.map((a) => a.answer.ok ? a.answer.name : ""))].sort(),
    failures: attempts.filter((a) => !a.answer.ok),
  };
}

/**
 * tcpAttempt from a source port the client picks: Deno.connect cannot bind one, node:net's
 * connect can.
 */
function tcpAttemptFrom(dest: HostPort, sourcePort: number, timeoutMs: number) {
  return new Promise<ProbeAnswer>((resolve) => {
    let text = "";
    let settled = false;
    const socket = connect({
      host: dest.host,
      port: dest.port,
      localAddress: "0.0.0.0",
      localPort: sourcePort,
    });
    const settle = (answer: ProbeAnswer) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const echoed = () => {
      const answer = parseEchoLine(text);
      settle(answer ? { ok: true, ...answer } : { ok: false, error: "empty" });
    };
    const timer = setTimeout(() => settle({ ok: false, error: "timeout" }), timeoutMs);
    socket.on("data", (chunk: Uint8Array) => {
      text += new TextDecoder().decode(chunk);
      if (text.includes("\n")) echoed();
    });
    socket.on("end", echoed);
    socket.on("error", (err: Error) => settle(classifyTcpError(err, false)));
  });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      tcp: { type: "string" },
      udp: { type: "string" },
      "udp-source-port": { type: "string" },
      "tcp-interval-ms": { type: "string", default: "20" },
      "udp-interval-ms": { type: "string", default: "100" },
      "timeout-ms": { type: "string", default: "1000" },
      "tcp-source-port": { type: "string" },
    },
    strict: true,
  });
  if (!values.tcp || !values.udp || !values["udp-source-port"]) {
    throw new Error("Missing --tcp, --udp or --udp-source-port");
  }
  const tcpDest = parseHostPort(values.tcp);
  const udpDest = parseHostPort(values.udp);
  const sourcePort = Number(values["udp-source-port"]);
  const tcpEvery = Number(values["tcp-interval-ms"]);
  const udpEvery = Number(values["udp-interval-ms"]);
  // A TCP attempt waits this long for its echo; a UDP exchange half of it (one at a time).
  const timeoutMs = Number(values["timeout-ms"]);
  const firstTcpPort = values["tcp-source-port"] === undefined
    ? null
    : Number(values["tcp-source-port"]);
  const started = performance.now();
  const startedEpochMs = Date.now();
  const now = () => Math.round(performance.now() - started);
  let stopping = false;
  const stopped = new Promise<void>((resolve) => {
    Deno.addSignalListener("SIGTERM", () => {
      stopping = true;
      resolve();
    });
  });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

  const tcp: TrafficAttempt[] = [];
  const inFlight = new Set<Promise<void>>();
  const tcpLoop = async () => {
    for (let i = 0; !stopping; i++) {
      const atMs = now();
      const sourcePort = firstTcpPort === null ? undefined : firstTcpPort + i;
      if (sourcePort !== undefined && sourcePort > 65535) {
        throw new Error(`Out of TCP source ports after "${firstTcpPort}"`);
      }
      const attempt = sourcePort === undefined
        ? tcpAttempt(tcpDest, timeoutMs)
        : tcpAttemptFrom(tcpDest, sourcePort, timeoutMs);
      const p = attempt.then((answer) => {
        tcp.push({ atMs, answer, ...(sourcePort === undefined ? {} : { sourcePort }) });
      });
      inFlight.add(p);
      p.finally(() => inFlight.delete(p));
      await sleep((i + 1) * tcpEvery - now());
    }
  };
  const udp: TrafficAttempt[] = [];
  const udpLoop = async () => {
    for (let i = 0; !stopping; i++) {
      const atMs = now();
      udp.push({ atMs, answer: await udpAttempt(udpDest, timeoutMs / 2, sourcePort) });
      await sleep((i + 1) * udpEvery - now());
    }
  };
  console.error("traffic started");
  const loops = Promise.all([tcpLoop(), udpLoop()]);
  await stopped;
  await loops;
  await Promise.all([...inFlight]);
  tcp.sort((a, b) => a.atMs - b.atMs);
  const report: TrafficReport = { startedEpochMs, tcp, udp };
  console.log(JSON.stringify(report));
  Deno.exit(0);
}

if (import.meta.main) await main();
