/**
 * Starts and stops the per-service health check servers as services come and go (upstream's
 * SyncServices + SyncEndpoints), reconciled after every applied sync.
 */
import type { Logger } from "../log/mod.ts";
import {
  ALL_ADDRESSES,
  createServiceHealthHandler,
  type ServiceHealthTarget,
} from "./service_health.ts";

/** An open listening socket with its HTTP server. */
export interface HealthListener {
  close(): Promise<void>;
}

/** Opens an HTTP server on `hostname:port`; throws when it cannot bind. */
export type ListenFn = (
  hostname: string,
  port: number,
  handler: (req: Request) => Response,
) => HealthListener;

/** The real listener: `Deno.serve`, closed with a graceful shutdown. */
export const denoListen: ListenFn = (hostname, port, handler) => {
  const server = Deno.serve({ hostname, port, onListen: () => {} }, handler);
  return { close: () => server.shutdown() };
};

/** Options for createServiceHealthServer. */
export interface ServiceHealthServerOptions {
  /** The proxy's own health, reported in every answer. */
  readonly healthy: () => boolean;
  readonly logger: Logger;
  /** Defaults to Deno.serve. */
  readonly listen?: ListenFn;
}

/** The set of running health check servers. */
export interface ServiceHealthServer {
  /**
   * Makes the running servers match `targets` (keyed by `namespace/name`) on `addresses`:
   * closes those no longer wanted or moved to another port, opens the new ones (a failed bind is
   * logged and retried on the next call), and updates every endpoint count.
   */
  sync(
    targets: ReadonlyMap<string, ServiceHealthTarget>,
    addresses: readonly string[],
  ): Promise<void>;
  /** `namespace/name` -> port of the servers listening now. */
  listening(): Map<string, number>;
  /** Closes every server. */
  close(): Promise<void>;
}

interface Instance {
  readonly port: number;
  /** Port plus addresses: a change of either means close and reopen. */
  readonly where: string;
  readonly listeners: HealthListener[];
  localEndpoints: number;
}

/** Creates the manager; nothing listens until the first sync(). */
export function createServiceHealthServer(
  options: ServiceHealthServerOptions,
): ServiceHealthServer {
  const listen = options.listen ?? denoListen;
  const { logger } = options;
  const instances = new Map<string, Instance>();

  const closeInstance = async (key: string, inst: Instance) => {
    for (const l of inst.listeners) {
      await l.close().catch((err) =>
        logger.error("Error closing health check server", { service: key, err })
      );
    }
  };

  /** Binds one address; the wildcard tries dual-stack `::` first, then IPv4 only. */
  const bind = (address: string, port: number, handler: (req: Request) => Response) => {
    if (address !== ALL_ADDRESSES) return listen(address, port, handler);
    try {
      return listen("::", port, handler);
    } catch {
      return listen("0.0.0.0", port, handler);
    }
  };

  const open = async (key: string, target: ServiceHealthTarget, addresses: readonly string[]) => {
    const inst: Instance = {
      port: target.port,
      where: `${target.port}@${addresses.join(",")}`,
      listeners: [],
      localEndpoints: target.localEndpoints,
    };
    const handler = createServiceHealthHandler(
      target,
      () => ({ localEndpoints: inst.localEndpoints, healthy: options.healthy() }),
    );
    try {
      for (const address of addresses) inst.listeners.push(bind(address, target.port, handler));
    } catch (err) {
      // Close what did open so that a retry (or another owner of the port) can bind.
      await closeInstance(key, inst);
      logger.error("Failed to start healthcheck", { service: key, port: target.port, err });
      return;
    }
    logger.debug(2, "Opening healthcheck", { service: key, port: target.port });
    instances.set(key, inst);
  };

  return {
    async sync(targets, addresses) {
      const where = (t: ServiceHealthTarget) => `${t.port}@${addresses.join(",")}`;
      for (const [key, inst] of [...instances]) {
        const t = targets.get(key);
        if (t && where(t) === inst.where) continue;
        logger.debug(2, "Closing healthcheck", { service: key, port: inst.port });
        instances.delete(key);
        await closeInstance(key, inst);
      }
      for (const [key, t] of targets) {
        const inst = instances.get(key);
        if (inst) inst.localEndpoints = t.localEndpoints;
        else await open(key, t, addresses);
      }
    },
    listening() {
      return new Map([...instances].map(([key, inst]) => [key, inst.port]));
    },
    async close() {
      const all = [...instances];
      instances.clear();
      for (const [key, inst] of all) await closeInstance(key, inst);
    },
  };
}
