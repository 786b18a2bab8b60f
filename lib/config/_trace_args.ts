/**
 * The arguments of `deno-kube-proxy trace`: the packet (`--from IP --to IP:PORT[/PROTO]
 * --source pod|node|external`) and how to answer (`--output`, `--rendered`). Pure; errors name
 * the argument and the expected form.
 */
import { canonicalIP, ipFamily } from "../net/mod.ts";
import type { FlagValue } from "./_flag_table.ts";
import { ConfigError, type TraceArgProtocol, type TraceRequest } from "./types.ts";

/** The flags only `trace` takes. */
export const TRACE_FLAGS: readonly string[] = ["from", "to", "source", "output", "rendered"];

const TO_FORM = `IP:PORT[/tcp|udp|sctp], such as "172.30.0.10:80/tcp" or "[fd00::10]:80"`;

function parseTo(text: string): { ip: string; port: number; protocol: TraceArgProtocol } {
  const m = /^(?:\[([^\]]+)\]|([^:/\[\]]+)):(\d{1,5})(?:\/([a-zA-Z]+))?$/.exec(text.trim());
  const ip = m === null ? null : canonicalIP(m[1] ?? m[2] ?? "");
  const bracketed = m !== null && m[1] !== undefined;
  if (m === null || ip === null || bracketed !== ip.includes(":")) {
    throw new ConfigError(`Invalid --to "${text}": expected ${TO_FORM}`);
  }
  const port = Number(m[3]);
  if (port < 1 || port > 65535) {
    throw new ConfigError(`Invalid --to "${text}": expected a port from 1 to 65535`);
  }
  const proto = (m[4] ?? "tcp").toLowerCase();
  if (proto !== "tcp" && proto !== "udp" && proto !== "sctp") {
    throw new ConfigError(`Invalid --to "${text}": expected the protocol tcp, udp or sctp`);
  }
  return { ip, port, protocol: proto };
}

/** Reads the trace flags; throws ConfigError naming the argument that is missing or malformed. */
export function parseTraceArgs(values: ReadonlyMap<string, FlagValue>): TraceRequest {
  const fromText = values.get("from") as string | undefined;
  const toText = values.get("to") as string | undefined;
  if (fromText === undefined || fromText === "") {
    throw new ConfigError(`Missing --from: expected the packet's source IP, such as "10.0.0.5"`);
  }
  if (toText === undefined || toText === "") {
    throw new ConfigError(`Missing --to: expected ${TO_FORM}`);
  }
  const from = canonicalIP(fromText.trim());
  if (from === null) {
    throw new ConfigError(`Invalid --from "${fromText}": expected an IPv4 or IPv6 address`);
  }
  const to = parseTo(toText);
  const family = ipFamily(from)!;
  if (ipFamily(to.ip) !== family) {
    throw new ConfigError(
      `Invalid --to "${toText}": expected an ${family} address, as --from "${fromText}" is`,
    );
  }
  return {
    family,
    from,
    to: to.ip,
    port: to.port,
    protocol: to.protocol,
    source: (values.get("source") as TraceRequest["source"] | undefined) ?? "auto",
    output: (values.get("output") as TraceRequest["output"] | undefined) ?? "text",
    rendered: values.get("rendered") === true,
  };
}
