/**
 * One run of upstream's syncProxyRules across the node's families, in steps that each read on
 * their own: take the snapshot, sync one family, reconcile stale conntrack flows, record metrics.
 */
import type { FamilyBackend, SyncReport } from "../backends/mod.ts";
import { type ConntrackReconciler, createConntrackReconciler } from "../conntrack/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { ProxyMetrics } from "../metrics/mod.ts";
import type { IPFamily, ProxyState, ProxyTracker } from "../proxy/mod.ts";
import type { ProxyHealth } from "../server/mod.ts";
import type { Clock } from "../sync/mod.ts";

/** What the sync needs; the app builds it once. */
export interface SyncDeps {
  readonly tracker: ProxyTracker;
  readonly backends: readonly FamilyBackend[];
  readonly metrics: ProxyMetrics;
  readonly health: ProxyHealth;
  readonly logger: Logger;
  readonly clock: Clock;
  /** Runs `conntrack` to reconcile stale UDP/SCTP flows; omit to skip conntrack cleanup. */
  readonly conntrackRunner?: CommandRunner;
  /** Upstream forces a full sync this often even without changes. */
  readonly fullSyncPeriodMs: number;
  /** Families whose next sync must be full (rules flushed behind our back); emptied on success. */
  readonly flushed: Set<IPFamily>;
  /** Called after every sync with the last applied snapshot of each family. */
  readonly onApplied?: (states: readonly ProxyState[]) => Promise<void>;
}

/** The snapshot of one family, forced full when the hourly full sync is due or rules were lost. */
function takeSnapshot(deps: SyncDeps, family: IPFamily, forceFull: boolean): ProxyState {
  const state = deps.tracker.snapshot(family);
  return forceFull || deps.flushed.has(family) ? { ...state, forceFullSync: true } : state;
}

/** Sets the no-local-endpoints gauge of one family, as upstream counts it each sync. */
function recordNoLocalEndpoints(metrics: ProxyMetrics, state: ProxyState): void {
  let internal = 0, external = 0;
  for (const sps of state.services.values()) {
    if (sps.localEndpoints.length > 0 || sps.allEndpoints.length === 0) continue;
    if (sps.info.internalPolicyLocal) internal++;
    if (sps.info.externalPolicyLocal) external++;
  }
  const ip_family = state.family;
  metrics.noLocalEndpoints.set({ ip_family, traffic_policy: "internal" }, internal);
  metrics.noLocalEndpoints.set({ ip_family, traffic_policy: "external" }, external);
}

/**
 * The conntrack reconciler over the app's runner, reporting to upstream's histogram and
 * deleted-entries counter; undefined when conntrack cleanup is off.
 */
function conntrackReconciler(deps: SyncDeps): ConntrackReconciler | undefined {
  if (!deps.conntrackRunner) return undefined;
  const { metrics } = deps;
  return createConntrackReconciler({
    runner: deps.conntrackRunner,
    logger: deps.logger,
    now: () => deps.clock.now(),
    metrics: {
      observeDuration: (ip_family, s) =>
        metrics.conntrackReconcileDuration.observe({ ip_family }, s),
      deleted: (ip_family, n) => metrics.conntrackDeleted.inc({ ip_family }, n),
      failed: (ip_family) => metrics.conntrackReconcileFailures.inc({ ip_family }),
    },
  });
}

/** Records one family's applied sync: the core metrics, the mode's own, and the log line. */
function recordSync(
  deps: SyncDeps,
  fb: FamilyBackend,
  state: ProxyState,
  report: SyncReport,
  seconds: number,
): void {
  const ip_family = fb.family;
  deps.metrics.syncDuration.observe({ ip_family }, seconds);
  deps.metrics.lastSyncTimestamp.set({ ip_family }, deps.clock.now() / 1000);
  fb.metrics.synced(report, seconds);
  deps.logger.debug(2, "Synced proxy rules", {
    family: fb.family,
    kind: report.full ? "full" : "partial",
    elapsed: `${seconds.toFixed(3)}s`,
    services: state.services.size,
    endpoints: state.totalEndpoints,
    changed: state.changed.size,
    rules: report.counts,
  });
}

/**
 * Observes how long each change took to reach the kernel. Trigger times are not kept per
 * family: with one family (the usual node) this is exact; on a dual-stack node each change is
 * counted under the first family.
 */
function recordProgrammingLatency(deps: SyncDeps, triggerTimes: readonly number[]): void {
  const now = deps.clock.now();
  const ip_family = deps.backends[0]?.family ?? "IPv4";
  for (const t of triggerTimes) {
    if (t <= now) deps.metrics.networkProgrammingDuration.observe({ ip_family }, (now - t) / 1000);
  }
}

/**
 * Whether a family's new snapshot leaves its applied rules as they are: not a full sync, no
 * service port of the family changed, and the same service CIDRs as the last applied snapshot.
 * Upstream syncs a family only when its own change trackers took a change (an EndpointSlice goes
 * to the proxier of its address family alone), so a change of one family costs the other none.
 */
function leavesRulesAsApplied(state: ProxyState, last: ProxyState | undefined): boolean {
  return last !== undefined && !state.forceFullSync && state.changed.size === 0 &&
    state.serviceCIDRs.length === last.serviceCIDRs.length &&
    state.serviceCIDRs.every((cidr, i) => cidr === last.serviceCIDRs[i]);
}

/**
 * Builds the function the bounded-frequency runner calls. Each family is synced on its own,
 * and only when its snapshot changes its rules or its last sync failed; a failed family is
 * logged and the first failure rethrown at the end so the runner retries.
 */
export function createSyncProxyRules(deps: SyncDeps): () => Promise<void> {
  const { tracker, logger, clock } = deps;
  /** The last applied snapshot per family, to find stale UDP flows. */
  const applied = new Map<IPFamily, ProxyState>();
  /** Families whose last sync failed: their next one runs whatever the snapshot says. */
  const failed = new Set<IPFamily>();
  const reconcileConntrack = conntrackReconciler(deps);
  let lastFullSync = clock.now();

  /** Syncs one family; returns the report, the error it failed with, or that it had nothing to do. */
  const syncFamily = async (fb: FamilyBackend, fullSyncDue: boolean) => {
    const started = clock.now();
    const state = takeSnapshot(deps, fb.family, fullSyncDue);
    recordNoLocalEndpoints(deps.metrics, state);
    if (!failed.has(fb.family) && leavesRulesAsApplied(state, applied.get(fb.family))) {
      logger.debug(4, "No change for this family, its rules stay as applied", {
        family: fb.family,
      });
      applied.set(fb.family, state);
      return { unchanged: true };
    }
    let report: SyncReport;
    try {
      report = await fb.backend.sync(state);
    } catch (err) {
      failed.add(fb.family);
      const seconds = (clock.now() - started) / 1000;
      deps.metrics.syncDuration.observe({ ip_family: fb.family }, seconds);
      // A CommandError's message names the command line and carries its stderr.
      logger.error("Failed to apply proxy rules", { family: fb.family, err });
      return { error: err };
    }
    failed.delete(fb.family);
    deps.flushed.delete(fb.family);
    // After every applied sync, the first one at start included: flows made while the proxy
    // was down or that the new rules made stale go; the previous snapshot names deleted services.
    await reconcileConntrack?.(state, applied.get(fb.family), report.full);
    applied.set(fb.family, state);
    recordSync(deps, fb, state, report, (clock.now() - started) / 1000);
    return { report };
  };

  return async () => {
    if (!tracker.isSynced()) {
      logger.debug(2, "Not syncing rules until Services and EndpointSlices have been synced");
      return;
    }
    const started = clock.now();
    const triggerTimes = tracker.takeChangeTriggerTimes();
    const pending = tracker.pending();
    const fullSyncDue = started - lastFullSync >= deps.fullSyncPeriodMs;
    const failures: unknown[] = [];
    let full = false;
    for (const fb of deps.backends) {
      const result = await syncFamily(fb, fullSyncDue);
      if ("error" in result) failures.push(result.error);
      else if ("report" in result) full ||= result.report.full;
    }
    if (full) lastFullSync = clock.now();
    deps.metrics.serviceChangesPending.set(0);
    deps.metrics.endpointChangesPending.set(0);
    logger.debug(2, "SyncProxyRules complete", {
      elapsed: `${((clock.now() - started) / 1000).toFixed(3)}s`,
      pendingServices: pending.services,
      pendingEndpoints: pending.endpoints,
    });
    // Health and latency are the rules' own, as upstream records them at the end of its sync:
    // what follows (the first sync's leftover removal, ~1 s at 10,000 services) does not delay
    // them.
    if (failures.length === 0) {
      recordProgrammingLatency(deps, triggerTimes);
      deps.health.updated(clock.now());
    }
    if (deps.onApplied) {
      await deps.onApplied([...applied.values()]).catch((err) =>
        logger.error("Error after applying the proxy rules", { err })
      );
    }
    if (failures.length > 0) throw failures[0];
  };
}
