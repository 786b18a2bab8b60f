/**
 * `--nodeport-addresses` resolved for one IP family, as upstream's NodePortAddresses: which
 * local addresses accept NodePort (and health check) traffic. Pure; every mode uses this copy.
 */
import { type CIDR, cidrContains, type IPFamily, parseCIDR } from "./ip.ts";

/** The entries of one family, and what they mean together. */
export interface NodePortAddresses {
  readonly family: IPFamily;
  /** The CIDRs of this family (`primary` becomes the primary node IP's /32 or /128). */
  readonly cidrs: readonly CIDR[];
  /** Every local address: no entry of this family, or a zero-prefix CIDR. */
  readonly matchAll: boolean;
  /** Some entry (a CIDR or `primary`) selects addresses of this family. */
  readonly specified: boolean;
  /** The selection includes 127.0.0.1 (so localhost NodePorts are asked for). */
  readonly containsIPv4Loopback: boolean;
}

const IPV4_LOOPBACK = "127.0.0.1";

/**
 * Resolves the entries for `family`. `primaryIP` is the node's first address of that family
 * (what `primary` stands for). Throws RangeError naming an entry that is neither.
 */
export function resolveNodePortAddresses(
  entries: readonly string[],
  family: IPFamily,
  primaryIP: string | undefined,
): NodePortAddresses {
  const cidrs: CIDR[] = [];
  for (const entry of entries) {
    if (entry === "primary") {
      const c = primaryIP === undefined
        ? null
        : parseCIDR(primaryIP.includes(":") ? `${primaryIP}/128` : `${primaryIP}/32`);
      if (c && c.family === family) cidrs.push(c);
      continue;
    }
    const c = parseCIDR(entry.trim());
    if (c === null) {
      throw new RangeError(
        `Invalid nodePortAddresses entry "${entry}": expected a CIDR or "primary"`,
      );
    }
    if (c.family === family) cidrs.push(c);
  }
  const matchAll = cidrs.length === 0 || cidrs.some((c) => c.prefix === 0);
  return {
    family,
    cidrs,
    matchAll,
    specified: cidrs.length > 0,
    containsIPv4Loopback: family === "IPv4" &&
      (matchAll || cidrs.some((c) => cidrContains(c, IPV4_LOOPBACK))),
  };
}

/** The addresses among `candidates` that the selection accepts, in order, without repeats. */
export function selectNodePortIPs(
  npa: NodePortAddresses,
  candidates: readonly string[],
): string[] {
  const out: string[] = [];
  for (const ip of candidates) {
    if (out.includes(ip)) continue;
    if (
      npa.matchAll
        ? ip.includes(":") === (npa.family === "IPv6")
        : npa.cidrs.some((c) => cidrContains(c, ip))
    ) {
      out.push(ip);
    }
  }
  return out;
}

/** True for 127.0.0.0/8 and ::1. */
export function isLoopbackIP(ip: string): boolean {
  return ip.startsWith("127.") || ip === "::1";
}
