/**
 * A connected UDP client socket over libc (Deno FFI). Deno's own UDP API cannot connect a
 * datagram socket, and only a connected socket learns of ICMP port-unreachable (REJECT).
 */
import type { HostPort } from "./host_port.ts";
import {
  AF_INET,
  AF_INET6,
  errno,
  libc,
  MSG_DONTWAIT,
  PEER_ERRORS,
  POLLIN,
  reuseAddress,
  SOCK_CLOEXEC,
  SOCK_DGRAM,
  SOCK_NONBLOCK,
  sockaddr,
} from "./libc.ts";

/** Linux errno values the probe classifies. */
export const Errno = {
  EAGAIN: 11,
  ENETUNREACH: 101,
  ECONNRESET: 104,
  ECONNREFUSED: 111,
  EHOSTUNREACH: 113,
} as const;

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
      if (!reuseAddress(fd)) return fail();
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
      // EAGAIN, or a value the runtime left in errno: wait for the socket again.
      const e = errno();
      if (PEER_ERRORS.has(e)) return { ok: false, errno: e };
      const left = deadline - Date.now();
      if (left <= 0) return { ok: true, value: null };
      const pollfd = new Uint8Array(8);
      const view = new DataView(pollfd.buffer);
      view.setInt32(0, this.fd, true);
      view.setInt16(4, POLLIN, true);
      await libc().pollAsync(pollfd, 1n, Math.max(1, left));
    }
  }

  /** Releases the descriptor. */
  close(): void {
    libc().close(this.fd);
  }
}
