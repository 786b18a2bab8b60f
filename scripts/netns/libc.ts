/**
 * The libc socket calls the test clients make through Deno FFI (scripts/netns/libc_udp.ts,
 * tests/e2e/support/continuity_libc_tcp.ts), opened once per process: Deno's own sockets cannot
 * connect a datagram socket or bind a TCP client's source port. Linux x86-64 values.
 */
import { parseIPv4, parseIPv6 } from "../../lib/net/mod.ts";

export const AF_INET = 2;
export const AF_INET6 = 10;
export const SOCK_STREAM = 1;
export const SOCK_DGRAM = 2;
export const SOCK_NONBLOCK = 0o4000;
export const SOCK_CLOEXEC = 0o2000000;
export const SOL_SOCKET = 1;
export const SO_REUSEADDR = 2;
export const SO_ERROR = 4;
export const POLLIN = 1;
export const POLLOUT = 4;
export const MSG_DONTWAIT = 0x40;

const symbols = {
  socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
  setsockopt: { parameters: ["i32", "i32", "i32", "buffer", "u32"], result: "i32" },
  getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  connect: { parameters: ["i32", "buffer", "u32"], result: "i32" },
  send: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  recv: { parameters: ["i32", "buffer", "usize", "i32"], result: "isize" },
  /** poll(2) on the calling thread: for a zero timeout. */
  poll: { parameters: ["buffer", "u64", "i32"], result: "i32" },
  /** poll(2) on a worker thread, for a wait that must not block the event loop. */
  pollAsync: {
    name: "poll",
    parameters: ["buffer", "u64", "i32"],
    result: "i32",
    nonblocking: true,
  },
  close: { parameters: ["i32"], result: "i32" },
  getpeername: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
  __errno_location: { parameters: [], result: "pointer" },
} as const;

let lib: Deno.DynamicLibrary<typeof symbols> | null = null;
/** The JS thread's errno, viewed once: see errno(). */
let errnoView: Deno.UnsafePointerView | null = null;

/** The libc calls above (libc.so.6 is opened on first use). */
export function libc(): Deno.DynamicLibrary<typeof symbols>["symbols"] {
  if (lib === null) {
    lib = Deno.dlopen("libc.so.6", symbols);
    const ptr = lib.symbols.__errno_location();
    if (ptr === null) throw new Error("libc's __errno_location() returned no address");
    errnoView = new Deno.UnsafePointerView(ptr);
  }
  return lib.symbols;
}

/**
 * errno of the JS thread, as the last failed call left it: read through a view made when libc
 * was opened, so that nothing between the call and the read allocates (an allocation may run a
 * collection, whose own system calls would overwrite errno). The runtime can still overwrite it
 * between the call and the read (ENOENT after a nonblocking connect() or recv(), which cannot
 * fail so), so a value that decides whether an attempt failed is taken only when the call can
 * give it (PEER_ERRORS); otherwise the socket is asked.
 */
export function errno(): number {
  libc();
  return errnoView!.getInt32();
}

/**
 * The errors a socket reports about its peer or the path to it: what a failed attempt is named
 * by. EAGAIN and EINPROGRESS are not among them. Linux x86-64 values.
 */
export const PEER_ERRORS: ReadonlySet<number> = new Set(Object.values({
  EPIPE: 32,
  ENETDOWN: 100,
  ENETUNREACH: 101,
  ECONNABORTED: 103,
  ECONNRESET: 104,
  ETIMEDOUT: 110,
  ECONNREFUSED: 111,
  EHOSTDOWN: 112,
  EHOSTUNREACH: 113,
}));

/** Whether `fd` is a connected socket (getpeername(2) succeeds; its errno is not needed). */
export function isConnected(fd: number): boolean {
  const addr = new Uint8Array(128);
  const len = new Uint8Array(new Uint32Array([addr.length]).buffer);
  return libc().getpeername(fd, addr, len) === 0;
}

/** SO_REUSEADDR on `fd`; false when setsockopt failed (see errno()). */
export function reuseAddress(fd: number): boolean {
  const one = new Uint8Array(new Int32Array([1]).buffer);
  return libc().setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, one, 4) >= 0;
}

/** A sockaddr_in / sockaddr_in6 for `host` (null: any address) and `port`. */
export function sockaddr(
  family: 4 | 6,
  host: string | null,
  port: number,
): Uint8Array<ArrayBuffer> {
  const buf = new Uint8Array(family === 4 ? 16 : 28);
  const view = new DataView(buf.buffer);
  view.setUint16(0, family === 4 ? AF_INET : AF_INET6, true);
  view.setUint16(2, port, false);
  if (host !== null) {
    const bytes = family === 4 ? parseIPv4(host) : parseIPv6(host);
    if (!bytes) throw new Error(`Invalid IPv${family} address "${host}"`);
    buf.set(bytes, family === 4 ? 4 : 8);
  }
  return buf;
}
