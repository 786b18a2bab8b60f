/**
 * Makes N TCP connections or UDP exchanges to one destination and prints a JSON array of
 * ProbeAnswer, so a test pays one `ip netns exec` per batch, not per connection.
 *
 *   deno run --allow-net --allow-ffi scripts/probe.ts --proto tcp --to 172.30.0.10:80 --count 20
 *
 * Flags: --proto tcp|udp, --to IP:PORT, --count N (1), --timeout-ms MS (1000),
 * --source-port P (udp only; attempts then run one at a time), --concurrency C (16).
 * Exits 0 whatever the attempts' outcomes; 1 on bad flags.
 */
import { parseArgs } from "node:util";
import { type HostPort, parseHostPort } from "./netns/host_port.ts";
import type { ProbeAnswer, ProbeSpec } from "./netns/probe_types.ts";
import { tcpAttempt } from "./netns/tcp_probe.ts";
import { udpAttempt } from "./netns/udp_probe.ts";

function intFlag(
  name: string,
  text: string | undefined,
  min: number,
  max: number,
): number | undefined {
  if (text === undefined) return undefined;
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) {
    throw new Error(`Invalid --${name} "${text}": expected an integer from ${min} to ${max}`);
  }
  return n;
}

/** Parses probe.ts flags into a spec. */
export function parseProbeFlags(argv: string[]): ProbeSpec {
  const { values } = parseArgs({
    args: argv,
    options: {
      proto: { type: "string" },
      to: { type: "string" },
      count: { type: "string" },
      "timeout-ms": { type: "string" },
      "source-port": { type: "string" },
      concurrency: { type: "string" },
    },
    strict: true,
  });
  const proto = values.proto;
  if (proto !== "tcp" && proto !== "udp") {
    throw new Error(`Invalid --proto "${proto ?? ""}": expected "tcp" or "udp"`);
  }
  if (values.to === undefined) throw new Error(`Missing --to: expected IP:PORT`);
  parseHostPort(values.to);
  const spec: { -readonly [K in keyof ProbeSpec]: ProbeSpec[K] } = { proto, to: values.to };
  const count = intFlag("count", values.count, 1, 100000);
  const timeoutMs = intFlag("timeout-ms", values["timeout-ms"], 1, 600000);
  const sourcePort = intFlag("source-port", values["source-port"], 1, 65535);
  const concurrency = intFlag("concurrency", values.concurrency, 1, 1024);
  if (count !== undefined) spec.count = count;
  if (timeoutMs !== undefined) spec.timeoutMs = timeoutMs;
  if (concurrency !== undefined) spec.concurrency = concurrency;
  if (sourcePort !== undefined) {
    if (proto !== "udp") {
      throw new Error(`Invalid --source-port "${sourcePort}": only supported with --proto udp`);
    }
    spec.sourcePort = sourcePort;
  }
  return spec;
}

/** Runs every attempt of a spec, keeping answers in attempt order. */
export async function runProbe(spec: ProbeSpec): Promise<ProbeAnswer[]> {
  const dest: HostPort = parseHostPort(spec.to);
  const count = spec.count ?? 1;
  const timeoutMs = spec.timeoutMs ?? 1000;
  const width = spec.sourcePort !== undefined ? 1 : Math.min(spec.concurrency ?? 16, count);
  const answers: ProbeAnswer[] = new Array(count);
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      answers[i] = spec.proto === "tcp"
        ? await tcpAttempt(dest, timeoutMs)
        : await udpAttempt(dest, timeoutMs, spec.sourcePort);
    }
  };
  await Promise.all(Array.from({ length: width }, worker));
  return answers;
}

if (import.meta.main) {
  let spec: ProbeSpec;
  try {
    spec = parseProbeFlags(Deno.args);
  } catch (err) {
    console.error(err instanceof Error ? err.message : String(err));
    Deno.exit(1);
  }
  console.log(JSON.stringify(await runProbe(spec)));
  Deno.exit(0);
}
