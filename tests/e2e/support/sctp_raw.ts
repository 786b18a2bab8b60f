/**
 * SCTP packets without the kernel's SCTP stack: this kernel has no sctp module, so no SCTP
 * socket can be opened, but raw IPv4 sockets of protocol 132 still send and receive SCTP. The
 * sender writes one INIT chunk (with its CRC32c, which conntrack checks); the listener prints,
 * as one JSON line, the first INIT it sees and the addresses it carries after any NAT.
 *
 *   deno run --allow-ffi tests/e2e/support/sctp_raw.ts send --to 172.30.0.80:80 --src-port 40000
 *   deno run --allow-ffi tests/e2e/support/sctp_raw.ts listen --timeout-ms 3000
 */
import { parseArgs } from "node:util";
import { parseIPv4 } from "../../../lib/net/mod.ts";

const AF_INET = 2;
const SOCK_RAW = 3;
const IPPROTO_SCTP = 132;
const SOL_SOCKET = 1;
const SO_RCVTIMEO = 20;
const INIT = 1;

const symbols = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  sendto: { parameters: ["i32", "buffer", "usize", "i32", "buffer", "u32"], result: "isize" },
  recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize", nonblocking: true },
} as const;

/** What the listener saw: the INIT's addresses and ports as they arrived. */
export interface SctpInitSeen {
  readonly src: string;
  readonly sport: number;
  readonly dst: string;
  readonly dport: number;
}

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** CRC32c (Castagnoli), the SCTP checksum (RFC 9260 appendix A). */
export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const b of bytes) crc = CRC32C_TABLE[(crc ^ b) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** An SCTP packet holding one INIT chunk from `sport` to `dport`, checksum filled in. */
export function sctpInitPacket(sport: number, dport: number, initiateTag: number): Uint8Array {
  const buf = new Uint8Array(12 + 20);
  const v = new DataView(buf.buffer);
  v.setUint16(0, sport);
  v.setUint16(2, dport);
  v.setUint32(4, 0); // An INIT travels with verification tag 0.
  v.setUint8(12, INIT);
  v.setUint16(14, 20);
  v.setUint32(16, initiateTag);
  v.setUint32(20, 65535); // a_rwnd
  v.setUint16(24, 1); // outbound streams
  v.setUint16(26, 1); // inbound streams
  v.setUint32(28, 1); // initial TSN
  v.setUint32(8, crc32c(buf), true); // Stored little-endian, as the kernel does.
  return buf;
}

/** Reads an IPv4 packet carrying SCTP; null unless it is an INIT. */
export function parseSctpInit(packet: Uint8Array): SctpInitSeen | null {
  const ihl = (packet[0]! & 0x0f) * 4;
  if (packet.length < ihl + 13 || packet[9] !== IPPROTO_SCTP || packet[ihl + 12] !== INIT) {
    return null;
  }
  const v = new DataView(packet.buffer, packet.byteOffset);
  return {
    src: dotted(packet.subarray(12, 16)),
    sport: v.getUint16(ihl),
    dst: dotted(packet.subarray(16, 20)),
    dport: v.getUint16(ihl + 2),
  };
}

const dotted = (b: Uint8Array) => [...b].join(".");

function rawSocket(lib: Deno.DynamicLibrary<typeof symbols>["symbols"]): number {
  const fd = lib.socket(AF_INET, SOCK_RAW, IPPROTO_SCTP);
  if (fd < 0) throw new Error("Cannot open a raw SCTP socket: expected root (CAP_NET_RAW)");
  return fd;
}

async function main(args: string[]): Promise<void> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      to: { type: "string" },
      "src-port": { type: "string", default: "40000" },
      "timeout-ms": { type: "string", default: "3000" },
    },
  });
  const lib = Deno.dlopen("libc.so.6", symbols).symbols;
  const fd = rawSocket(lib);
  if (positionals[0] === "send") {
    const [host, port] = (values.to ?? "").split(":");
    const ip = parseIPv4(host ?? "");
    if (!ip || !port) throw new Error(`Invalid --to "${values.to}": expected IPv4:port`);
    const packet = sctpInitPacket(Number(values["src-port"]), Number(port), 0x5c7e1234);
    const addr = new Uint8Array(16);
    new DataView(addr.buffer).setUint16(0, AF_INET, true);
    addr.set(ip, 4);
    const sent = lib.sendto(fd, packet, BigInt(packet.length), 0, addr, addr.length);
    if (Number(sent) !== packet.length) throw new Error(`Cannot send to "${values.to}"`);
    console.log("sent");
    return;
  }
  if (positionals[0] !== "listen") {
    throw new Error(`Unknown mode "${positionals[0]}": expected send or listen`);
  }
  const ms = Number(values["timeout-ms"]);
  const tv = new BigInt64Array([BigInt(Math.floor(ms / 1000)), BigInt((ms % 1000) * 1000)]);
  lib.setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, new Uint8Array(tv.buffer), 16);
  console.log("ready");
  const deadline = Date.now() + ms;
  const buf = new Uint8Array(2048);
  while (Date.now() < deadline) {
    const n = Number(await lib.recv(fd, buf, BigInt(buf.length), 0));
    const seen = n > 0 ? parseSctpInit(buf.subarray(0, n)) : null;
    if (seen) {
      console.log(JSON.stringify(seen));
      return;
    }
  }
  console.log(JSON.stringify({ error: "timeout" }));
}

if (import.meta.main) await main(Deno.args);
