/**
 * One short TCP connection, from a chosen IPv4 source port or any, over libc (Deno FFI):
 * Deno.connect cannot bind the local port, and the port-reuse case needs each port to come back
 * while IPVS still lists the port's previous connection. The client reads the echo line and then waits for
 * the server's FIN before closing, so the server closes first and the client's socket leaves no
 * TIME_WAIT behind that would block the port's next connection.
 */
import { parseEchoLine } from "../../../scripts/netns/echo_line.ts";
import type { HostPort } from "../../../scripts/netns/host_port.ts";
import {
  AF_INET,
  errno,
  isConnected,
  libc,
  MSG_DONTWAIT,
  PEER_ERRORS,
  POLLIN,
  POLLOUT,
  reuseAddress,
  SO_ERROR,
  SOCK_CLOEXEC,
  SOCK_NONBLOCK,
  SOCK_STREAM,
  sockaddr,
  SOL_SOCKET,
} from "../../../scripts/netns/libc.ts";

const EINPROGRESS = 115;
const EADDRNOTAVAIL = 99;
const ECONNREFUSED = 111;

/** The errno values a failed connection is named by, as tcp_probe.ts names Deno's errors. */
const ERRNO_NAMES: Readonly<Record<number, string>> = {
  98: "source port in use",
  99: "source port busy for this destination",
  101: "unreachable",
  104: "reset",
  110: "timeout",
  111: "refused",
  113: "unreachable",
};

/**
 * One poll(2) over every socket waiting, every few milliseconds: hundreds of connections in
 * flight cost one system call per tick instead of a blocked thread each (thread hand-offs are
 * what an emulated CPU can least afford).
 */
class Poller {
  readonly #waiting = new Map<
    number,
    { events: number; deadline: number; done: (ok: boolean) => void }
  >();
  #timer: ReturnType<typeof setTimeout> | null = null;

  /** Resolves true once `fd` is ready for `events`, false once `deadline` (epoch ms) passes. */
  wait(fd: number, events: number, deadline: number): Promise<boolean> {
    return new Promise((done) => {
      this.#waiting.set(fd, { events, deadline, done });
      this.#timer ??= setTimeout(() => this.#tick(), 0);
    });
  }

  #tick(): void {
    this.#timer = null;
    const fds = [...this.#waiting.keys()];
    const buf = new Uint8Array(8 * fds.length);
    const view = new DataView(buf.buffer);
    fds.forEach((fd, i) => {
      view.setInt32(8 * i, fd, true);
      view.setInt16(8 * i + 4, this.#waiting.get(fd)!.events, true);
    });
    const n = fds.length > 0 ? libc().poll(buf, BigInt(fds.length), 0) : 0;
    const now = Date.now();
    fds.forEach((fd, i) => {
      const w = this.#waiting.get(fd)!;
      // revents: the asked events, or an error or hang-up the next call will name.
      if (n > 0 && view.getInt16(8 * i + 6, true) !== 0) {
        this.#waiting.delete(fd);
        w.done(true);
      } else if (now >= w.deadline) {
        this.#waiting.delete(fd);
        w.done(false);
      }
    });
    if (this.#waiting.size > 0) this.#timer = setTimeout(() => this.#tick(), POLL_TICK_MS);
  }
}

/** How often the poller looks at its sockets. */
const POLL_TICK_MS = 2;
const poller = new Poller();

/** Waits until `fd` is ready for `events` or `deadline` (ms since the epoch) passes. */
function waitFor(fd: number, events: number, deadline: number): Promise<boolean> {
  return poller.wait(fd, events, deadline);
}

/**
 * What one connection got: the answering pod's name, or why not; `closedFirst` says the
 * client closed before the server's FIN came, which leaves the port in TIME_WAIT on the client;
 * `notSent` says connect() failed at once in the client's own namespace, so no packet left and
 * nothing of the proxy's was involved: "port busy" when the kernel refused the port (its
 * previous connection to the same address is still closing there), "local error" for any other
 * such error, which the caller reports on its own.
 */
export type SourcePortAttempt =
  & (
    | { ok: true; name: string }
    | { ok: false; error: string; notSent?: "port busy" | "local error" }
  )
  & { closedFirst: boolean };

/** A failed attempt, named by the errno `code` and, for a code without a name, the failed `call`. */
const failed = (code: number, call: string): SourcePortAttempt => ({
  ok: false,
  error: ERRNO_NAMES[code] ?? `errno ${code} (${call})`,
  closedFirst: true,
});

/**
 * Connects from `sourcePort` (0: any) to `dest` and reads one echo line within `timeoutMs`. A
 * socket found ready when the client looks counts as answered even if the client process was
 * descheduled past the deadline (whole-machine stalls of the emulated guest): only the network
 * not answering is a timeout.
 */
export async function tcpFromSourcePort(
  dest: HostPort,
  sourcePort: number,
  timeoutMs: number,
): Promise<SourcePortAttempt> {
  if (dest.family !== 4) throw new Error(`Invalid destination "${dest.host}": expected IPv4`);
  const c = libc();
  const deadline = Date.now() + timeoutMs;
  const fd = c.socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return failed(errno(), "socket");
  try {
    if (!reuseAddress(fd)) return failed(errno(), "setsockopt");
    const local = sockaddr(4, null, sourcePort);
    if (sourcePort !== 0 && c.bind(fd, local, local.length) < 0) return failed(errno(), "bind");
    const remote = sockaddr(4, dest.host, dest.port);
    // A nonblocking connect() fails at once only before its SYN is out: EADDRNOTAVAIL, or a
    // SYN refused on the way out (ECONNREFUSED, which stays a failure). Any other value is
    // EINPROGRESS or one the runtime left in errno (libc.ts): the socket says which below.
    let connectErrno = 0;
    if (c.connect(fd, remote, remote.length) < 0) {
      connectErrno = errno();
      if (connectErrno === EADDRNOTAVAIL) {
        return {
          ok: false,
          error: ERRNO_NAMES[connectErrno]!,
          closedFirst: true,
          notSent: "port busy",
        };
      }
      if (connectErrno === ECONNREFUSED) return failed(connectErrno, "connect");
    }
    if (!await waitFor(fd, POLLOUT, deadline)) {
      return { ok: false, error: "timeout", closedFirst: true };
    }
    const soError = new Uint8Array(4);
    const soLen = new Uint8Array(new Uint32Array([4]).buffer);
    if (c.getsockopt(fd, SOL_SOCKET, SO_ERROR, soError, soLen) < 0) {
      return failed(errno(), "getsockopt");
    }
    const connectErr = new DataView(soError.buffer).getInt32(0, true);
    if (connectErr !== 0) return failed(connectErr, "SO_ERROR");
    if (connectErrno !== 0 && connectErrno !== EINPROGRESS && !isConnected(fd)) {
      // No error pending and no peer: connect() failed at once, and no SYN left the client.
      const named = ERRNO_NAMES[connectErrno] ?? `errno ${connectErrno}`;
      return {
        ok: false,
        error: `connect() failed in the client: ${named}`,
        closedFirst: true,
        notSent: "local error",
      };
    }
    const buf = new Uint8Array(512);
    let text = "", eof = false;
    while (!eof) {
      const n = Number(c.recv(fd, buf, BigInt(buf.length), MSG_DONTWAIT));
      const e = n < 0 ? errno() : 0;
      if (n > 0) text += new TextDecoder().decode(buf.subarray(0, n));
      else if (n === 0) eof = true;
      // EAGAIN, or a value the runtime left in errno: wait for the socket again (an error
      // recv() took leaves it closed, and the next recv() returns 0: no answer, a failure).
      else if (PEER_ERRORS.has(e)) return failed(e, "recv");
      else if (!await waitFor(fd, POLLIN, deadline)) break;
    }
    const answer = parseEchoLine(text);
    if (answer) return { ok: true, name: answer.name, closedFirst: !eof };
    return { ok: false, error: text === "" && !eof ? "timeout" : "empty", closedFirst: !eof };
  } finally {
    c.close(fd);
  }
}
