/** The long-running proxy: prepare the chosen mode, start the app and its servers. */
import { Registry } from "../metrics/mod.ts";
import { loadMode } from "../backends/mod.ts";
import type { ProxyConfig } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import { tuneConntrack } from "../conntrack/mod.ts";
import { createProxyMetrics, type ProxyMetrics, registerProcessMetrics } from "../metrics/mod.ts";
import {
  bindableHealthCheckAddresses,
  BindFailure,
  createHealthHandler,
  createMetricsHandler,
  createServiceHealthServer,
  healthCheckAddresses,
  isNodeEligible,
  serveOn,
  serviceHealthTargets,
  unpermittedHealthCheckMessage,
} from "../server/mod.ts";
import { CommandFailure } from "./command_failure.ts";
import { asCommandFailure } from "./commands.ts";
import { watchConfigFile } from "./config_watch.ts";
import { applyOomScoreAdj } from "./oom.ts";
import { createLeftoverRemoval } from "./leftover_removal.ts";
import { createProxyApp } from "./proxy_app.ts";
import { type EarlySource, startEarly } from "../source/mod.ts";
import { createStateIntake, type StateIntake } from "./state_intake.ts";
import { createStateSource } from "./state_source.ts";
import { trackerSettings } from "./tracker_settings.ts";

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
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  if (options.configFile) {
    watchConfigFile({
      path: options.configFile,
      signal,
      logger,
      onError: () => metrics.configWatchFailures.inc(),
    }).then((msg) => {
      if (msg === null) return;
      configChanged = msg;
      configChange.abort();
    }, (err) => {
      // watchConfigFile handles its own failures; this is a last resort, never an unhandled one.
      logger.error("Watching the config file failed", { err });
      metrics.configWatchFailures.inc();
    });
  }
  const createSource = createStateSource(config, logger, { metrics });
  const intake = createStateIntake({
    nodeName: config.hostnameOverride,
    settings: trackerSettings(config),
    metrics,
    logger,
  });
  // The first lists travel while the start checks run, decoded into the tracker as they come.
  const stopEarly = new AbortController();
  const source = startEarly(
    createSource,
    AbortSignal.any([signal, stopEarly.signal]),
    (event) => intake.apply(event),
  );
  try {
    await runWithSource({ config, runner, logger, signal, source, registry, metrics, intake });
  } finally {
    stopEarly.abort();
  }
  if (configChanged !== null) throw new CommandFailure(configChanged, 2);
}

/** What runWithSource is handed: the configuration and what already runs. */
interface Started {
  readonly config: ProxyConfig;
  readonly runner: CommandRunner;
  readonly logger: Logger;
  readonly signal: AbortSignal;
  readonly source: EarlySource;
  readonly registry: Registry;
  readonly metrics: ProxyMetrics;
  readonly intake: StateIntake;
}

/** Everything after the source started: start checks, housekeeping, servers and the app. */
async function runWithSource(started: Started): Promise<void> {
  const { config, runner, logger, signal, source, registry, metrics, intake } = started;
  const mode = await loadMode(config.mode);
  const prepared = await asCommandFailure(() => mode.prepare({ config, runner, logger }));
  logger.info(mode.startMessage, {
    ...prepared.details,
    families: prepared.families,
    node: config.hostnameOverride,
  });
  // Start-up housekeeping runs while the first lists come in; the first sync waits for it.
  // Each step logs its own failures and goes on.
  const housekeeping = Promise.all([
    tuneConntrack({ config: config.conntrack, runner, logger }),
    applyOomScoreAdj({ value: config.oomScoreAdj, runner, logger }),
  ]).then(() => {}, (err) => logger.error("Start-up housekeeping failed", { err }));
  const modeMetrics = mode.registerMetrics(registry, {
    ...(prepared.packetCounters !== undefined ? { packetCounters: prepared.packetCounters } : {}),
    logger,
  });
  registerProcessMetrics(registry);
  // The other modes' rules keep routing services until this mode's first sync is in the
  // kernel for every family; only then are they removed (no moment with neither in place).
  const leftovers = createLeftoverRemoval({
    mode: mode.name,
    families: prepared.families,
    runner,
    logger,
  });
  /** The node IPs the net permission lacks, as last reported (one line, not one per sync). */
  let reportedUnpermitted = "";
  // Asked only when a load balancer probes, which is after the app below exists.
  const serviceHealth = createServiceHealthServer({
    healthy: () => app.health.status().healthy,
    logger,
  });
  const app = createProxyApp({
    intake,
    createSource: (sink) => source.attach(sink),
    backends: prepared.createBackends(modeMetrics),
    minSyncPeriodMs: config.minSyncPeriodMs,
    syncPeriodMs: config.syncPeriodMs,
    ...(prepared.fullSyncPeriodMs !== undefined
      ? { fullSyncPeriodMs: prepared.fullSyncPeriodMs }
      : {}),
    logger,
    metrics,
    conntrackRunner: runner,
    syncAfter: housekeeping,
    onApplied: async (states) => {
      await leftovers.afterSync(states);
      const bindable = bindableHealthCheckAddresses(
        healthCheckAddresses(config.nodePortAddresses, states.flatMap((s) => s.node.ips)),
        (ip) => Deno.permissions.querySync({ name: "net", host: ip }).state === "granted",
      );
      const unpermitted = bindable.unpermitted.join(",");
      if (unpermitted !== reportedUnpermitted) {
        reportedUnpermitted = unpermitted;
        if (unpermitted !== "") {
          logger.warn(unpermittedHealthCheckMessage(bindable.unpermitted, bindable.addresses));
        }
      }
      return serviceHealth.sync(serviceHealthTargets(states), bindable.addresses);
    },
  });
  // The initial state counts as queued: if no first sync follows (API server unreachable,
  // wrong credentials), /healthz turns 503 after 2 x syncPeriod instead of staying 200.
  app.health.queued(Date.now());
  const nodeEligible = () => isNodeEligible(app.tracker.node());
  const servers = [
    { server: "healthz", address: config.healthzBindAddress },
    { server: "metrics", address: config.metricsBindAddress },
  ].filter((s) => s.address !== "").map(({ server, address }) => {
    const handler = server === "healthz"
      ? createHealthHandler({ health: app.health, metrics, nodeEligible })
      : createMetricsHandler(registry, config.mode);
    try {
      return serveOn({
        server,
        address,
        handler,
        signal,
        logger,
        hardFail: config.bindAddressHardFail,
      });
    } catch (err) {
      if (err instanceof BindFailure) throw new CommandFailure(err.message, 1);
      throw err;
    }
  });
  await app.start(signal);
  await serviceHealth.close();
  for (const s of servers) await s.finished;
}
