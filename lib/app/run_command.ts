/** The long-running proxy: detect the kernel's iptables, start the app and its servers. */
import { Registry } from "prom-client";
import { detectIptablesFlavour } from "../backends/iptables/mod.ts";
import type { ProxyConfig } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import { createProxyMetrics, registerProcessMetrics } from "../metrics/mod.ts";
import {
  bindableHealthCheckAddresses,
  createHealthHandler,
  createMetricsHandler,
  createServiceHealthServer,
  healthCheckAddresses,
  isNodeEligible,
  serveOn,
  serviceHealthTargets,
} from "../server/mod.ts";
import { CommandFailure } from "./commands.ts";
import { watchConfigFile } from "./config_watch.ts";
import { tuneConntrack } from "./conntrack_tuning.ts";
import { createIptablesBackends, usableFamilies } from "./iptables_backends.ts";
import { applyOomScoreAdj } from "./oom.ts";
import { createProxyApp } from "./proxy_app.ts";
import { createStateSource } from "./state_source.ts";
import { enableRouteLocalnet } from "./sysctl.ts";

/** What runCommand needs besides the configuration. */
export interface RunOptions {
  /** The `--config` file: its change on disk ends the run with exit code 2. */
  readonly configFile?: string;
}

/** Runs the proxy until `outer` aborts (or the config file changes: CommandFailure code 2). */
export async function runCommand(
  config: ProxyConfig,
  runner: CommandRunner,
  logger: Logger,
  outer: AbortSignal,
  options: RunOptions = {},
): Promise<void> {
  const configChange = new AbortController();
  const signal = AbortSignal.any([outer, configChange.signal]);
  let configChanged: string | null = null;
  if (options.configFile) {
    watchConfigFile({ path: options.configFile, signal, logger }).then((msg) => {
      if (msg === null) return;
      configChanged = msg;
      configChange.abort();
    });
  }
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
  await tuneConntrack({ config: config.conntrack, runner, logger });
  await applyOomScoreAdj({ value: config.oomScoreAdj, runner, logger });
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  registerProcessMetrics(registry);
  // Asked only when a load balancer probes, which is after the app below exists.
  const serviceHealth = createServiceHealthServer({
    healthy: () => app.health.status().healthy,
    logger,
  });
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
    onApplied: (states) =>
      serviceHealth.sync(
        serviceHealthTargets(states),
        bindableHealthCheckAddresses(
          healthCheckAddresses(config.nodePortAddresses, states.flatMap((s) => s.node.ips)),
          (ip) => Deno.permissions.querySync({ name: "net", host: ip }).state === "granted",
        ),
      ),
  });
  // The initial state counts as queued: if no first sync follows (API server unreachable,
  // wrong credentials), /healthz turns 503 after 2 x syncPeriod instead of staying 200.
  app.health.queued(Date.now());
  const nodeEligible = () => isNodeEligible(app.tracker.node());
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
  await serviceHealth.close();
  for (const s of servers) if (s) await s.finished;
  if (configChanged !== null) throw new CommandFailure(configChanged, 2);
}
