/**
 * A connected UDP client socket over libc (Deno FFI). Deno's own UDP API cannot connect a
 * datagram socket, and only a connected socket learns of ICMP port-unreachable (REJECT).
 */
import type { HostPort } from "./host_port.ts";
import { parseIPv4, parseIPv6 } from "../../lib/net/mod.ts";

const AF_INET = 2;
const AF_INET6 = 10;
const SOCK_DGRAM = 2;
const SOCK_NONBLOCK = 0o4000;
const SOCK_CLOEXEC = 0o2000000;
const SOL_SOCKET = 1;
const SO_REUSEADDR = 2;
const POLLIN = 1;
const MSG_DONTWAIT = 0x40;

/** Linux errno values the probe classifies. */
export const Errno = {
  EAGAIN: 11,
  ENETUNREACH: 101,
  ECONNRESET: 104,
  ECONNREFUSED: 111,
  EHOSTUNREACH: 113,
} as const;

const symbols = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  send: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32", nonblocking: true },
  close: { parameters: ["i32"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

let lib: Deno.DynamicLibrary<typeof symbols> | null = null;

function libc(): Deno.DynamicLibrary<typeof symbols>["symbols"] {
  lib ??= Deno.dlopen("libc.so.6", symbols);
  return lib.symbols;
}

function errno(): number {
  const ptr = libc().__errno_location();
  return ptr === null ? 0 : new Deno.UnsafePointerView(ptr).getInt32();
}

function sockaddr(family: 4 | 6, host: string | null, port: number): Uint8Array<ArrayBuffer> {
  const buf = new Uint8Array(family === 4 ? 16 : 28);
  const view = new DataView(buf.buffer);
  view.setUint16(0, family === 4 ? AF_INET : AF_INET6, true);
  view.setUint16(2, port, false);
  if (host !== null) buf.set(addressBytes(family, host), family === 4 ? 4 : 8);
  return buf;
}

function addressBytes(family: 4 | 6, host: string): Uint8Array {
  const bytes = family === 4 ? parseIPv4(host) : parseIPv6(host);
  if (!bytes) throw new Error(`Invalid IPv${family} address "${host}"`);
  return bytes;
}

/** Result of a socket call: data, or the errno it failed with. */
export type UdpResult<T> = { ok: true; value: T } | { ok: false; errno: number };

/** A non-blocking connected UDP socket; always `close()` it. */
export class ConnectedUdpSocket {
  private constructor(private readonly fd: number) {}

  /** Opens a socket to `dest`, bound to `sourcePort` (with SO_REUSEADDR) when given. */
  static open(dest: HostPort, sourcePort?: number): UdpResult<ConnectedUdpSocket> {
    const c = libc();
    const fd = c.socket(
      dest.family === 4 ? AF_INET : AF_INET6,
      SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
      0,
    );
    if (fd < 0) return { ok: false, errno: errno() };
    const fail = (): UdpResult<ConnectedUdpSocket> => {
      const e = errno();
      c.close(fd);
      return { ok: false, errno: e };
    };
    if (sourcePort !== undefined) {
      const one = new Uint8Array(new Int32Array([1]).buffer);
      if (c.setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, one, 4) < 0) return fail();
      const local = sockaddr(dest.family, null, sourcePort);
      if (c.bind(fd, local, local.length) < 0) return fail();
    }
    const remote = sockaddr(dest.family, dest.host, dest.port);
    if (c.connect(fd, remote, remote.length) < 0) return fail();
    return { ok: true, value: new ConnectedUdpSocket(fd) };
  }

  /** Sends one datagram. */
  send(data: Uint8Array<ArrayBuffer>): UdpResult<number> {
    const n = Number(libc().send(this.fd, data, BigInt(data.length), 0));
    return n < 0 ? { ok: false, errno: errno() } : { ok: true, value: n };
  }

  /** Waits up to `timeoutMs` for one datagram; `null` value on timeout. */
  async receive(timeoutMs: number): Promise<UdpResult<Uint8Array | null>> {
    const deadline = Date.now() + timeoutMs;
    const buf = new Uint8Array(2048);
    while (true) {
      const n = Number(libc().recv(this.fd, buf, BigInt(buf.length), MSG_DONTWAIT));
      if (n >= 0) return { ok: true, value: buf.slice(0, n) };
      const e = errno();
      if (e !== Errno.EAGAIN) return { ok: false, errno: e };
      const left = deadline - Date.now();
      if (left <= 0) return { ok: true, value: null };
      const pollfd = new Uint8Array(8);
      const view = new DataView(pollfd.buffer);
      view.setInt32(0, this.fd, true);
      view.setInt16(4, POLLIN, true);
      await libc().poll(pollfd, 1n, Math.max(1, left));
    }
  }

  /** Releases the descriptor. */
  close(): void {
    libc().close(this.fd);
  }
}
