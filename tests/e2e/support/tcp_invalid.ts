/**
 * Sends one TCP SYN whose checksum is wrong, through a raw IPv4 socket: conntrack (with
 * net.netfilter.nf_conntrack_checksum=1, the default) marks such a packet INVALID, which is
 * what kube-proxy's INVALID-state drop rule in KUBE-FORWARD catches.
 *
 *   deno run --allow-ffi tests/e2e/support/tcp_invalid.ts 10.0.1.2:8080
 */
import { parseIPv4 } from "../../../lib/net/mod.ts";

const AF_INET = 2;
const SOCK_RAW = 3;
const IPPROTO_TCP = 6;

const symbols = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  sendto: { parameters: ["i32", "buffer", "usize", "i32", "buffer", "u32"], result: "isize" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

/** A 20-byte TCP header with SYN set and a checksum that cannot be right (0xdead). */
export function badChecksumSyn(sport: number, dport: number): Uint8Array {
  const b = new Uint8Array(20);
  const v = new DataView(b.buffer);
  v.setUint16(0, sport);
  v.setUint16(2, dport);
  v.setUint32(4, 1);
  b[12] = 5 << 4; // data offset: 5 words
  b[13] = 0x02; // SYN
  v.setUint16(14, 65535);
  v.setUint16(16, 0xdead);
  return b;
}

if (import.meta.main) {
  const [to = ""] = Deno.args;
  const at = to.lastIndexOf(":");
  const ip = parseIPv4(to.slice(0, at));
  if (at < 0 || ip === null) throw new Error(`Invalid destination "${to}": expected IP:PORT`);
  const port = Number(to.slice(at + 1));
  const lib = Deno.dlopen("libc.so.6", symbols);
  const fd = lib.symbols.socket(AF_INET, SOCK_RAW, IPPROTO_TCP);
  if (fd < 0) throw new Error("socket(AF_INET, SOCK_RAW, IPPROTO_TCP) failed: needs root");
  const addr = new Uint8Array(16);
  new DataView(addr.buffer).setUint16(0, AF_INET, true);
  new DataView(addr.buffer).setUint16(2, port);
  addr.set(ip, 4);
  const packet = badChecksumSyn(40000, port);
  const sent = lib.symbols.sendto(fd, packet, BigInt(packet.length), 0, addr, addr.length);
  lib.symbols.close(fd);
  lib.close();
  if (Number(sent) !== packet.length) throw new Error(`sendto sent ${sent} bytes`);
}
