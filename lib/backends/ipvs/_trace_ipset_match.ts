/**
 * `-m set --match-set NAME dst,dst,src` against ipsets as `ipset save` (or the renderer's
 * restore input) holds them: the packet's fields, picked by the flags, are put in the
 * canonical member spelling of the set's type and looked up; `hash:ip,port,net` members are
 * searched for a net holding the source. Only the set types IPVS mode creates are known. Pure.
 */
import { type KernelIpset } from "./_ipset_parser.ts";
import { cidrContains, parseCIDR } from "../../net/mod.ts";
import { canonicalAddress } from "./_trace_canonical.ts";

/** The packet fields an ipset match can read. */
export interface IpsetPacket {
  readonly src: string;
  readonly dst: string;
  readonly dport: number;
  /** Lower case: tcp, udp, sctp. */
  readonly proto: string;
}

function address(p: IpsetPacket, flag: string): string {
  return canonicalAddress(flag === "src" ? p.src : p.dst);
}

/**
 * Whether the packet is in `set` under `flags` (`dst`, `dst,dst`, `dst,dst,src`). Throws on a
 * set type or flag count IPVS mode does not write.
 */
export function ipsetMatches(
  set: KernelIpset,
  name: string,
  flags: string,
  p: IpsetPacket,
): boolean {
  const f = flags.split(",");
  const port = `${p.proto}:${p.dport}`;
  switch (set.type) {
    case "hash:ip":
      if (f.length === 1) return set.members.has(address(p, f[0]!));
      break;
    case "bitmap:port":
      if (f.length === 1) return set.members.has(String(p.dport));
      break;
    case "hash:ip,port":
      if (f.length === 2) return set.members.has(`${address(p, f[0]!)},${port}`);
      break;
    case "hash:ip,port,ip":
      if (f.length === 3) {
        return set.members.has(`${address(p, f[0]!)},${port},${address(p, f[2]!)}`);
      }
      break;
    case "hash:ip,port,net":
      if (f.length === 3) {
        const head = `${address(p, f[0]!)},${port},`;
        const third = address(p, f[2]!);
        for (const m of set.members) {
          if (!m.startsWith(head)) continue;
          const net = m.slice(head.length);
          const c = parseCIDR(net.includes("/") ? net : `${net}/${net.includes(":") ? 128 : 32}`);
          if (c !== null && cidrContains(c, third)) return true;
        }
        return false;
      }
      break;
  }
  throw new RangeError(
    `Cannot trace through "-m set --match-set ${name} ${flags}": set type "${set.type}" with ${f.length} flags is not one IPVS mode writes`,
  );
}
