/** Starts an HTTP server on a kube-proxy style `host:port` bind address. */
import type { Logger } from "../log/mod.ts";

/** Splits `host:port` / `[v6]:port`; throws when malformed. */
export function splitBindAddress(addr: string): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  if (!m) throw new Error(`Invalid bind address "${addr}": expected host:port`);
  return { hostname: m[1] ?? (m[2] || "0.0.0.0"), port: Number(m[3]) };
}

/** Serves `handler` on `addr` until `signal` aborts; logs and returns null when it cannot bind. */
export function serveOn(
  addr: string,
  handler: (req: Request) => Response | Promise<Response>,
  signal: AbortSignal,
  logger: Logger,
): Deno.HttpServer | null {
  const { hostname, port } = splitBindAddress(addr);
  try {
    return Deno.serve({ hostname, port, signal, onListen: () => {} }, handler);
  } catch (err) {
    logger.error("Could not start server", { address: addr, err });
    return null;
  }
}
