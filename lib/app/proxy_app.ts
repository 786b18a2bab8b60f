/**
 * The running proxy: source events feed the tracker, a bounded-frequency runner turns pending
 * changes into snapshots, and one backend per IP family applies them (upstream's ProxyServer
 * plus its meta-proxier).
 */
import type { ProxyBackend, SyncReport } from "../backends/mod.ts";
import { deleteStaleFlows, staleUdpFlows } from "../conntrack/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { ProxyMetrics } from "../metrics/mod.ts";
import {
  createProxyTracker,
  type IPFamily,
  type ProxyState,
  type ProxyTracker,
} from "../proxy/mod.ts";
import type { ObjectEvent, ObjectKind, ObjectSink, ObjectSource } from "../source/mod.ts";
import { BoundedFrequencyRunner, type Clock, systemClock } from "../sync/mod.ts";
import { createProxyHealth, type ProxyHealth } from "./proxy_health.ts";

/** One backend bound to the IP family it programs. */
export interface FamilyBackend {
  readonly family: IPFamily;
  readonly backend: ProxyBackend;
}

/** Everything the app needs, built by the caller (main.ts wires the real ones). */
export interface ProxyAppOptions {
  readonly nodeName: string;
  readonly fallbackNodeIPs?: readonly string[];
  /** Builds the source of cluster state, feeding the given sink. */
  readonly createSource: (sink: ObjectSink) => ObjectSource;
  readonly backends: readonly FamilyBackend[];
  readonly minSyncPeriodMs: number;
  readonly syncPeriodMs: number;
  readonly logger: Logger;
  readonly metrics: ProxyMetrics;
  readonly clock?: Clock;
  /** Runs `conntrack` to delete stale UDP flows; omit to skip conntrack cleanup. */
  readonly conntrackRunner?: CommandRunner;
  /** Upstream forces a full sync this often even without changes (default 1 h). */
  readonly fullSyncPeriodMs?: number;
  /**
   * Called after every sync with the last successfully applied snapshot of each family (the
   * per-service health check servers follow it); errors are logged, never fatal.
   */
  readonly onApplied?: (states: readonly ProxyState[]) => Promise<void>;
}

/** The assembled proxy. Nothing runs until start(). */
export interface ProxyApp {
  readonly tracker: ProxyTracker;
  readonly health: ProxyHealth;
  /** Runs until `signal` aborts; resolves once every loop has stopped. */
  start(signal: AbortSignal): Promise<void>;
}

/** Wires tracker, runner and backends together. */
export function createProxyApp(options: ProxyAppOptions): ProxyApp {
  const { logger, metrics, backends } = options;
  const clock = options.clock ?? systemClock;
  const health = createProxyHealth({ syncPeriodMs: options.syncPeriodMs, clock });
  const tracker = createProxyTracker({
    nodeName: options.nodeName,
    fallbackNodeIPs: options.fallbackNodeIPs ?? [],
    // Changes made before we started would report huge latencies from the initial list.
    startTimeMs: clock.now(),
    onInvalid: (kind, key, reason) => {
      metrics.invalidObjects.inc({ kind });
      logger.error("Skipping invalid object", { kind, object: key, reason });
    },
  });
  /** Families whose next sync must be full because their rules were flushed behind our back. */
  const flushed = new Set<IPFamily>();
  /** The last applied snapshot per family, to find stale UDP flows. */
  const applied = new Map<IPFamily, ProxyState>();
  const fullSyncPeriodMs = options.fullSyncPeriodMs ?? 60 * 60 * 1000;
  let lastFullSync = clock.now();

  const syncProxyRules = async () => {
    if (!tracker.isSynced()) {
      logger.debug(2, "Not syncing rules until Services and EndpointSlices have been synced");
      return;
    }
    const started = clock.now();
    const triggerTimes = tracker.takeChangeTriggerTimes();
    const pending = tracker.pending();
    const failures: unknown[] = [];
    const fullSyncDue = started - lastFullSync >= fullSyncPeriodMs;
    let full = false;
    for (const { family, backend } of backends) {
      // Each family is its own proxier upstream, so its metrics carry an ip_family label.
      const familyStarted = clock.now();
      const ip_family = family;
      let state = tracker.snapshot(family);
      if (fullSyncDue || flushed.has(family)) {
        state = { ...state, forceFullSync: true };
      }
      let noLocalInternal = 0, noLocalExternal = 0;
      for (const sps of state.services.values()) {
        if (sps.localEndpoints.length > 0) continue;
        if (sps.info.internalPolicyLocal && sps.allEndpoints.length > 0) noLocalInternal++;
        if (sps.info.externalPolicyLocal && sps.allEndpoints.length > 0) noLocalExternal++;
      }
      metrics.noLocalEndpoints.set({ ip_family, traffic_policy: "internal" }, noLocalInternal);
      metrics.noLocalEndpoints.set({ ip_family, traffic_policy: "external" }, noLocalExternal);
      let report: SyncReport;
      try {
        report = await backend.sync(state);
      } catch (err) {
        metrics.syncDuration.observe({ ip_family }, (clock.now() - familyStarted) / 1000);
        // A CommandError's message names the command line and carries its stderr.
        logger.error("Failed to apply proxy rules", { family, err });
        failures.push(err);
        continue;
      }
      flushed.delete(family);
      full ||= report.full;
      if (options.conntrackRunner) {
        const stale = staleUdpFlows(applied.get(family), state);
        if (stale.length > 0) {
          const n = await deleteStaleFlows(options.conntrackRunner, family, stale, logger);
          metrics.conntrackDeleted.inc({ ip_family }, n);
        }
      }
      applied.set(family, state);
      for (const [table, n] of Object.entries(report.ruleCounts)) {
        metrics.iptablesTotal.set({ ip_family, table }, n);
      }
      const seconds = (clock.now() - familyStarted) / 1000;
      metrics.syncDuration.observe({ ip_family }, seconds);
      (report.full ? metrics.syncFullDuration : metrics.syncPartialDuration)
        .observe({ ip_family }, seconds);
      metrics.lastSyncTimestamp.set({ ip_family }, clock.now() / 1000);
      logger.debug(2, "Synced proxy rules", {
        family,
        kind: report.full ? "full" : "partial",
        elapsed: `${seconds.toFixed(3)}s`,
        services: state.services.size,
        endpoints: state.totalEndpoints,
        changed: state.changed.size,
        rules: report.ruleCounts,
      });
    }
    if (full) lastFullSync = clock.now();
    const seconds = (clock.now() - started) / 1000;
    metrics.serviceChangesPending.set(0);
    metrics.endpointChangesPending.set(0);
    logger.debug(2, "SyncProxyRules complete", {
      elapsed: `${seconds.toFixed(3)}s`,
      pendingServices: pending.services,
      pendingEndpoints: pending.endpoints,
    });
    if (options.onApplied) {
      await options.onApplied([...applied.values()]).catch((err) =>
        logger.error("Error after applying the proxy rules", { err })
      );
    }
    if (failures.length > 0) throw failures[0];
    const now = clock.now();
    // Trigger times are not kept per family: with one family (the usual node) this is exact;
    // on a dual-stack node each change is counted under the first family.
    const programmed = backends[0]?.family ?? "IPv4";
    for (const t of triggerTimes) {
      if (t <= now) {
        metrics.networkProgrammingDuration.observe({ ip_family: programmed }, (now - t) / 1000);
      }
    }
    health.updated(now);
  };

  const runner = new BoundedFrequencyRunner({
    name: "sync-runner",
    fn: syncProxyRules,
    minIntervalMs: options.minSyncPeriodMs,
    maxIntervalMs: options.syncPeriodMs,
    clock,
    logger,
  });

  const queue = () => {
    const now = clock.now();
    health.queued(now);
    for (const { family } of backends) {
      metrics.lastQueuedTimestamp.set({ ip_family: family }, now / 1000);
    }
    const p = tracker.pending();
    metrics.serviceChangesPending.set(p.services);
    metrics.endpointChangesPending.set(p.endpoints);
    runner.run();
  };

  const sink: ObjectSink = {
    onEvent(event: ObjectEvent) {
      tracker.handleEvent(event);
      if (event.kind === "Service") metrics.serviceChangesTotal.inc();
      if (event.kind === "EndpointSlice") metrics.endpointChangesTotal.inc();
      if (tracker.isSynced()) queue();
    },
    onSynced(kind: ObjectKind) {
      tracker.markSynced(kind);
      if (tracker.isSynced()) queue();
    },
  };

  /** Every syncPeriod, look for our canary chains; if gone, force a full sync. */
  const watchCanaries = (signal: AbortSignal) => {
    let timer: number | undefined;
    const check = async () => {
      for (const { family, backend } of backends) {
        try {
          if (await backend.rulesFlushed()) {
            logger.info("Proxy rules were flushed; forcing a full resync", { family });
            flushed.add(family);
          }
        } catch (err) {
          logger.error("Could not check the canary chains", { family, err });
        }
      }
      if (flushed.size > 0) runner.run();
      if (!signal.aborted) timer = clock.setTimeout(check, options.syncPeriodMs);
    };
    timer = clock.setTimeout(check, options.syncPeriodMs);
    signal.addEventListener("abort", () => {
      if (timer !== undefined) clock.clearTimeout(timer);
    });
  };

  return {
    tracker,
    health,
    async start(signal: AbortSignal) {
      const source = options.createSource(sink);
      const stopped = runner.start(signal);
      watchCanaries(signal);
      await source.start(signal);
      await stopped;
    },
  };
}
