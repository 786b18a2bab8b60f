/**
 * Starts the /healthz and /metrics HTTP servers on kube-proxy style `host:port` bind addresses,
 * as upstream's serveHealthz and serveMetrics do: a server that cannot bind is logged and tried
 * again every 5 s until it binds, or, with `--bind-address-hard-fail`, ends the program.
 */
import type { Logger } from "../log/mod.ts";
import { type Clock, sleep, systemClock } from "../sync/mod.ts";

/** Splits `host:port` / `[v6]:port`; throws when malformed. */
export function splitBindAddress(addr: string): { hostname: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(addr);
  if (!m) throw new Error(`Invalid bind address "${addr}": expected host:port`);
  return { hostname: m[1] ?? (m[2] || "0.0.0.0"), port: Number(m[3]) };
}

/** Upstream's retry period for a health or metrics server that failed (wait.Until's period). */
export const SERVER_RETRY_MS = 5_000;

/** A server that cannot bind while `--bind-address-hard-fail` is set. */
export class BindFailure extends Error {
  /** `server` names the server ("healthz", "metrics"), `address` its bind address. */
  constructor(readonly server: string, readonly address: string, cause: unknown) {
    super(
      `Cannot start the ${server} server on "${address}": ${
        cause instanceof Error ? cause.message : String(cause)
      }`,
      { cause },
    );
    this.name = "BindFailure";
  }
}

/** Binds one HTTP server; throws when it cannot. Defaults to Deno.serve. */
export type ServeFn = (
  options: { hostname: string; port: number; signal: AbortSignal },
  handler: (req: Request) => Response | Promise<Response>,
) => { readonly finished: Promise<void> };

const denoServe: ServeFn = ({ hostname, port, signal }, handler) =>
  Deno.serve({ hostname, port, signal, onListen: () => {} }, handler);

/** What serveOn needs. */
export interface ServeOnOptions {
  /** The server's name in logs and errors: "healthz" or "metrics". */
  readonly server: string;
  /** `host:port`. */
  readonly address: string;
  readonly handler: (req: Request) => Response | Promise<Response>;
  readonly signal: AbortSignal;
  readonly logger: Logger;
  /** `--bind-address-hard-fail`: a failed bind throws BindFailure instead of being retried. */
  readonly hardFail: boolean;
  /** Wait between attempts; default SERVER_RETRY_MS. */
  readonly retryMs?: number;
  readonly clock?: Clock;
  readonly serve?: ServeFn;
}

/** A server being served or retried. */
export interface ServedServer {
  /** Resolves once the server has stopped (after `signal` aborted), never rejects. */
  readonly finished: Promise<void>;
  /** Resolves true once the server listens, false if `signal` aborts first. */
  readonly listening: Promise<boolean>;
}

/**
 * Serves `handler` on `address` until `signal` aborts. The first bind is tried at once: when it
 * fails, `hardFail` throws BindFailure (the caller exits 1); otherwise the failure is logged and
 * the bind retried every `retryMs` in the background, each failure logged again.
 */
export function serveOn(options: ServeOnOptions): ServedServer {
  const { server, address, handler, signal, logger } = options;
  const serve = options.serve ?? denoServe;
  const clock = options.clock ?? systemClock;
  const retryMs = options.retryMs ?? SERVER_RETRY_MS;
  const { hostname, port } = splitBindAddress(address);
  const attempt = (): { readonly finished: Promise<void> } | Error => {
    try {
      return serve({ hostname, port, signal }, handler);
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
  };
  const failed = (err: Error) =>
    logger.error(`Failed to start the ${server} server; retrying`, {
      address,
      retryInMs: retryMs,
      err,
    });

  if (signal.aborted) {
    return { finished: Promise.resolve(), listening: Promise.resolve(false) };
  }
  const first = attempt();
  if (!(first instanceof Error)) {
    return { finished: first.finished, listening: Promise.resolve(true) };
  }
  if (options.hardFail) throw new BindFailure(server, address, first);
  failed(first);
  let markListening: (yes: boolean) => void = () => {};
  const listening = new Promise<boolean>((resolve) => markListening = resolve);
  const finished = (async () => {
    while (!signal.aborted) {
      await sleep(clock, retryMs, signal);
      if (signal.aborted) break;
      const next = attempt();
      if (next instanceof Error) {
        failed(next);
        continue;
      }
      logger.info(`Started the ${server} server`, { address });
      markListening(true);
      await next.finished;
      return;
    }
    markListening(false);
  })();
  return { finished, listening };
}
