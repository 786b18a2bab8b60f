/** Strict IP address and CIDR parsing: every address from the API or a file passes through here. */

/** An IP family; one proxier (and one ProxyState) exists per family. */
export type IPFamily = "IPv4" | "IPv6";

const IPV4_OCTET = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;
/**
 * A whole dotted quad in parseIPv4's strict form (no leading zeros): such text is already
 * canonical, so the hot path (100,000 endpoint addresses in a large list) needs no parsing.
 */
const IPV4_TEXT =
  /^(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)$/;

/** Parses a dotted-quad IPv4 address into 4 bytes, or null. Leading zeros are rejected. */
export function parseIPv4(s: string): Uint8Array | null {
  const parts = s.split(".");
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i]!;
    if (!IPV4_OCTET.test(p)) return null;
    out[i] = Number(p);
  }
  return out;
}

/** Parses an IPv6 address (with `::` and an optional embedded IPv4 tail) into 16 bytes, or null. */
export function parseIPv6(s: string): Uint8Array | null {
  if (s.length === 0 || s.length > 45 || s.includes("%")) return null;
  const dbl = s.indexOf("::");
  if (dbl !== -1 && s.indexOf("::", dbl + 1) !== -1) return null;
  const parseGroups = (part: string): number[] | null => {
    if (part === "") return [];
    const groups: number[] = [];
    const items = part.split(":");
    for (let i = 0; i < items.length; i++) {
      const g = items[i]!;
      if (i === items.length - 1 && g.includes(".")) {
        const v4 = parseIPv4(g);
        if (!v4) return null;
        groups.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return null;
        groups.push(parseInt(g, 16));
      }
    }
    return groups;
  };
  let groups: number[];
  if (dbl === -1) {
    const g = parseGroups(s);
    if (!g || g.length !== 8) return null;
    groups = g;
  } else {
    const head = parseGroups(s.slice(0, dbl));
    const tail = parseGroups(s.slice(dbl + 2));
    if (!head || !tail || head.length + tail.length > 7) return null;
    groups = [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  }
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    out[2 * i] = g >> 8;
    out[2 * i + 1] = g & 0xff;
  });
  return out;
}

/** The family of a valid IP address, or null when `s` is not one. */
export function ipFamily(s: string): IPFamily | null {
  if (IPV4_TEXT.test(s)) return "IPv4";
  if (!s.includes(":")) return null;
  if (parseIPv6(s)) return "IPv6";
  return null;
}

/** True when `s` is a valid IPv4 or IPv6 address. */
export function isIP(s: string): boolean {
  return ipFamily(s) !== null;
}

function parseAny(s: string): Uint8Array | null {
  return parseIPv4(s) ?? parseIPv6(s);
}

/** Canonical text of an address (IPv6 lower-case and compressed), or null when invalid. */
export function canonicalIP(s: string): string | null {
  if (IPV4_TEXT.test(s)) return s;
  const v6 = s.includes(":") ? parseIPv6(s) : null;
  if (!v6) return null;
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((v6[i]! << 8) | v6[i + 1]!);
  let bestStart = -1, bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen && j - i > 1) [bestStart, bestLen] = [i, j - i];
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(":");
  return `${hex.slice(0, bestStart).join(":")}::${hex.slice(bestStart + bestLen).join(":")}`;
}

/** A parsed CIDR block. */
export interface CIDR {
  readonly family: IPFamily;
  /** The network address (host bits cleared), canonical text. */
  readonly ip: string;
  readonly prefix: number;
  readonly bytes: Uint8Array;
}

/** Parses `ip/prefix` (host bits are cleared, as Go's net.ParseCIDR does), or null. */
export function parseCIDR(s: string): CIDR | null {
  const slash = s.indexOf("/");
  if (slash === -1) return null;
  const addr = s.slice(0, slash);
  const prefixText = s.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return null;
  const bytes = parseAny(addr);
  if (!bytes) return null;
  const prefix = Number(prefixText);
  if (prefix > bytes.length * 8) return null;
  const net = bytes.slice();
  for (let bit = prefix; bit < net.length * 8; bit++) {
    net[bit >> 3] = net[bit >> 3]! & ~(0x80 >> (bit & 7));
  }
  const family: IPFamily = bytes.length === 4 ? "IPv4" : "IPv6";
  const ip = family === "IPv4" ? Array.from(net).join(".") : canonicalIP(bytesToIPv6(net))!;
  return { family, ip, prefix, bytes: net };
}

function bytesToIPv6(b: Uint8Array): string {
  const g: string[] = [];
  for (let i = 0; i < 16; i += 2) g.push(((b[i]! << 8) | b[i + 1]!).toString(16));
  return g.join(":");
}

/** Canonical `ip/prefix` text of a CIDR. */
export function cidrString(c: CIDR): string {
  return `${c.ip}/${c.prefix}`;
}

/** True when the valid address `ip` lies inside `cidr`. */
export function cidrContains(cidr: CIDR, ip: string): boolean {
  const b = parseAny(ip);
  if (!b || b.length !== cidr.bytes.length) return false;
  for (let bit = 0; bit < cidr.prefix; bit++) {
    const mask = 0x80 >> (bit & 7);
    if ((b[bit >> 3]! & mask) !== (cidr.bytes[bit >> 3]! & mask)) return false;
  }
  return true;
}

/** `ip:port`, with brackets for IPv6 (Go's net.JoinHostPort). */
export function joinHostPort(ip: string, port: number): string {
  return ip.includes(":") ? `[${ip}]:${port}` : `${ip}:${port}`;
}
