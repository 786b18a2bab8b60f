/** HTTP handlers of the health and metrics servers, as `(Request) => Response` functions. */
import type { Registry } from "../metrics/mod.ts";
import type { ProxyHealth } from "./proxy_health.ts";
import type { ProxyMetrics } from "../metrics/mod.ts";
import type { NodeStatus } from "../proxy/mod.ts";

/** What the health handler needs. */
export interface HealthHandlerOptions {
  readonly health: ProxyHealth;
  readonly metrics: ProxyMetrics;
  /** False when the Node is being deleted or tainted for deletion. */
  readonly nodeEligible: () => boolean;
}

/**
 * Upstream's /healthz node eligibility: false once the Node is being deleted or the cluster
 * autoscaler has tainted it for deletion; true while the Node is unknown.
 */
export function isNodeEligible(node: NodeStatus | undefined): boolean {
  if (!node) return true;
  return !node.deletionTimestamp &&
    !node.taints.some((t) => t.key === "ToBeDeletedByClusterAutoscaler");
}

function json(status: number, body: unknown): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "Content-Type": "application/json", "X-Content-Type-Options": "nosniff" },
  });
}

/** Serves /healthz and /livez as upstream's proxy health server does. */
export function createHealthHandler(options: HealthHandlerOptions): (req: Request) => Response {
  return (req) => {
    const path = new URL(req.url).pathname;
    const s = options.health.status();
    const base = {
      lastUpdated: new Date(s.lastUpdated).toISOString(),
      currentTime: new Date(s.now).toISOString(),
    };
    if (path === "/livez") {
      const code = s.healthy ? 200 : 503;
      options.metrics.livezTotal.inc({ code: String(code) });
      return json(code, base);
    }
    if (path === "/healthz") {
      const eligible = options.nodeEligible();
      const code = s.healthy && eligible ? 200 : 503;
      options.metrics.healthzTotal.inc({ code: String(code) });
      return json(code, { ...base, nodeEligible: eligible });
    }
    return new Response("404 page not found\n", { status: 404 });
  };
}

/** Serves /metrics from the registry and /proxyMode. */
export function createMetricsHandler(
  registry: Registry,
  mode: string,
): (req: Request) => Promise<Response> {
  return async (req) => {
    const path = new URL(req.url).pathname;
    if (path === "/metrics") {
      return new Response(await registry.metrics(), {
        headers: { "Content-Type": registry.contentType },
      });
    }
    if (path === "/proxyMode") return new Response(mode);
    return new Response("404 page not found\n", { status: 404 });
  };
}
