/** One TCP probe attempt: connect, read the echo line, all within one deadline. */
import { parseEchoLine } from "./echo_line.ts";
import type { HostPort } from "./host_port.ts";
import type { ProbeAnswer } from "./probe_types.ts";

const decoder = new TextDecoder();

/** Maps a connect or read failure to a probe error kind (by error class and code, not text). */
export function classifyTcpError(err: unknown, timedOut: boolean): ProbeAnswer {
  if (timedOut) return { ok: false, error: "timeout" };
  if (err instanceof Deno.errors.ConnectionRefused) return { ok: false, error: "refused" };
  if (err instanceof Deno.errors.ConnectionReset) return { ok: false, error: "reset" };
  if (err instanceof Deno.errors.TimedOut) return { ok: false, error: "timeout" };
  if (err instanceof Deno.errors.NetworkUnreachable) return { ok: false, error: "unreachable" };
  const code = (err as { code?: unknown })?.code;
  if (code === "EHOSTUNREACH" || code === "ENETUNREACH") return { ok: false, error: "unreachable" };
  if (code === "ECONNREFUSED") return { ok: false, error: "refused" };
  return { ok: false, error: "error", detail: String(err) };
}

/** Connects to `dest` and reads one echo line, giving up after `timeoutMs`. */
export async function tcpAttempt(dest: HostPort, timeoutMs: number): Promise<ProbeAnswer> {
  const abort = new AbortController();
  let conn: Deno.TcpConn | null = null;
  const timer = setTimeout(() => {
    abort.abort();
    try {
      conn?.close();
    } catch {
      // Already closed by the reader.
    }
  }, timeoutMs);
  try {
    conn = await Deno.connect({ hostname: dest.host, port: dest.port, signal: abort.signal });
    let text = "";
    const buf = new Uint8Array(512);
    while (!text.includes("\n")) {
      const n = await conn.read(buf);
      if (n === null) break;
      text += decoder.decode(buf.subarray(0, n));
    }
    const answer = parseEchoLine(text);
    return answer ? { ok: true, ...answer } : { ok: false, error: "empty" };
  } catch (err) {
    return classifyTcpError(err, abort.signal.aborted);
  } finally {
    clearTimeout(timer);
    if (!abort.signal.aborted) {
      try {
        conn?.close();
      } catch {
        // Already closed.
      }
    }
  }
}
