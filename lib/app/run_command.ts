/** The long-running proxy: detect the kernel's iptables, start the app and its servers. */
import { Registry } from "prom-client";
import { detectIptablesFlavour } from "../backends/iptables/mod.ts";
import type { ProxyConfig } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import { createProxyMetrics } from "../metrics/mod.ts";
import { createHealthHandler, createMetricsHandler, serveOn } from "../server/mod.ts";
import { CommandFailure } from "./commands.ts";
import { createIptablesBackends, usableFamilies } from "./iptables_backends.ts";
import { createProxyApp } from "./proxy_app.ts";
import { createStateSource } from "./state_source.ts";
import { enableRouteLocalnet } from "./sysctl.ts";

/** Runs the proxy until `signal` aborts. */
export async function runCommand(
  config: ProxyConfig,
  runner: CommandRunner,
  logger: Logger,
  signal: AbortSignal,
): Promise<void> {
  if (config.mode !== "iptables") {
    throw new CommandFailure(
      `Invalid --proxy-mode "${config.mode}": only "iptables" is available yet`,
      1,
    );
  }
  const createSource = createStateSource(config, logger);
  const probe = await runner({ cmd: "iptables-legacy-save", args: ["-t", "nat"] });
  const probeNft = await runner({ cmd: "iptables-nft-save", args: ["-t", "nat"] });
  if (probe.code !== 0 && probeNft.code !== 0) {
    throw new CommandFailure(
      `Cannot run iptables: ${probeNft.stderr.trim() || probe.stderr.trim()}`,
      2,
    );
  }
  const flavour = await detectIptablesFlavour(runner);
  const families = await usableFamilies(runner, flavour);
  logger.info("Using iptables proxy", { flavour, families, node: config.hostnameOverride });

  if (families.includes("IPv4") && config.iptables.localhostNodePorts) {
    await enableRouteLocalnet(runner, logger);
  }
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  const app = createProxyApp({
    nodeName: config.hostnameOverride,
    fallbackNodeIPs: config.nodeIPs,
    createSource,
    backends: createIptablesBackends({ config, flavour, families, runner, logger, metrics }),
    minSyncPeriodMs: config.minSyncPeriodMs,
    syncPeriodMs: config.syncPeriodMs,
    logger,
    metrics,
    conntrackRunner: runner,
  });
  const nodeEligible = () => {
    const node = app.tracker.node();
    if (!node) return true;
    return !node.deletionTimestamp &&
      !node.taints.some((t) => t.key === "ToBeDeletedByClusterAutoscaler");
  };
  const servers = [
    config.healthzBindAddress &&
    serveOn(
      config.healthzBindAddress,
      createHealthHandler({ health: app.health, metrics, nodeEligible }),
      signal,
      logger,
    ),
    config.metricsBindAddress &&
    serveOn(config.metricsBindAddress, createMetricsHandler(registry, config.mode), signal, logger),
  ];
  await app.start(signal);
  for (const s of servers) if (s) await s.finished;
}
