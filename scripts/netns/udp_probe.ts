/** One UDP probe attempt: send a datagram on a connected socket and read the echo line. */
import { parseEchoLine } from "./echo_line.ts";
import type { HostPort } from "./host_port.ts";
import { ConnectedUdpSocket, Errno } from "./libc_udp.ts";
import type { ProbeAnswer } from "./probe_types.ts";

const decoder = new TextDecoder();

/** Classifies a socket errno the way the TCP probe classifies Deno's errors. */
export function classifyErrno(errno: number): ProbeAnswer {
  switch (errno) {
    case Errno.ECONNREFUSED:
      return { ok: false, error: "refused" };
    case Errno.EHOSTUNREACH:
    case Errno.ENETUNREACH:
      return { ok: false, error: "unreachable" };
    case Errno.ECONNRESET:
      return { ok: false, error: "reset" };
    default:
      return { ok: false, error: "error", detail: `errno ${errno}` };
  }
}

/** Sends `payload` to `dest` and waits up to `timeoutMs` for one answer datagram. */
export async function udpAttempt(
  dest: HostPort,
  timeoutMs: number,
  sourcePort?: number,
): Promise<ProbeAnswer> {
  const opened = ConnectedUdpSocket.open(dest, sourcePort);
  if (!opened.ok) return classifyErrno(opened.errno);
  const sock = opened.value;
  try {
    const sent = sock.send(new TextEncoder().encode("probe\n"));
    if (!sent.ok) return classifyErrno(sent.errno);
    const got = await sock.receive(timeoutMs);
    if (!got.ok) return classifyErrno(got.errno);
    if (got.value === null) return { ok: false, error: "timeout" };
    const answer = parseEchoLine(decoder.decode(got.value));
    return answer ? { ok: true, ...answer } : { ok: false, error: "empty" };
  } finally {
    sock.close();
  }
}
