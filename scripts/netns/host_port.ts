/** Parsing of `ip:port` destinations given to the probe and the echo server. */
import { parseIPv4, parseIPv6 } from "../../lib/net/mod.ts";

/** A literal address and port; names are never resolved, so probes stay inside the test topology. */
export interface HostPort {
  readonly host: string;
  readonly port: number;
  readonly family: 4 | 6;
}

/** Parses `10.0.1.2:80` or `[fd00:10::1:2]:80`; throws on anything else. */
export function parseHostPort(text: string): HostPort {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([0-9.]+)):(\d{1,5})$/.exec(text);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || host === undefined || port < 1 || port > 65535) {
    throw new Error(`Invalid destination "${text}": expected IP:PORT such as "10.0.1.2:80"`);
  }
  if (m[1] !== undefined && parseIPv6(host)) return { host, port, family: 6 };
  if (m[2] !== undefined && parseIPv4(host)) return { host, port, family: 4 };
  throw new Error(`Invalid destination "${text}": "${host}" is not an IP address`);
}

/** Parses a comma-separated port list such as `80,8080`; throws on a bad or repeated port. */
export function parsePortList(text: string, flag: string): number[] {
  if (text === "") return [];
  const ports = text.split(",").map((p) => {
    const n = /^\d{1,5}$/.test(p) ? Number(p) : NaN;
    if (!(n >= 1 && n <= 65535)) {
      throw new Error(`Invalid ${flag} "${text}": expected ports 1-65535 separated by commas`);
    }
    return n;
  });
  if (new Set(ports).size !== ports.length) {
    throw new Error(`Invalid ${flag} "${text}": a port is listed twice`);
  }
  return ports;
}
