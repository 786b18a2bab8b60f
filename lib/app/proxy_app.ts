/**
 * The running proxy: source events feed the tracker, a bounded-frequency runner turns pending
 * changes into snapshots, and one backend per IP family applies them (upstream's ProxyServer
 * plus its meta-proxier).
 */
import type { FamilyBackend } from "../backends/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { ProxyMetrics } from "../metrics/mod.ts";
import type { IPFamily, ProxyState, ProxyTracker } from "../proxy/mod.ts";
import { createProxyHealth, type ProxyHealth } from "../server/mod.ts";
import type { ObjectEvent, ObjectKind, ObjectSink, ObjectSource } from "../source/mod.ts";
import { BoundedFrequencyRunner, type Clock, systemClock } from "../sync/mod.ts";
import { createMemoryReclaimer, type MemoryReclaimerOptions } from "./memory_reclaim.ts";
import type { StateIntake } from "./state_intake.ts";
import { createSyncProxyRules } from "./sync_proxy_rules.ts";

/** Everything the app needs, built by the caller (main.ts wires the real ones). */
export interface ProxyAppOptions {
  /** The tracker the source's events go into (made before the app: see createStateIntake). */
  readonly intake: StateIntake;
  /** Builds the source of cluster state, feeding the given sink. */
  readonly createSource: (sink: ObjectSink) => ObjectSource;
  readonly backends: readonly FamilyBackend[];
  readonly minSyncPeriodMs: number;
  readonly syncPeriodMs: number;
  readonly logger: Logger;
  readonly metrics: ProxyMetrics;
  readonly clock?: Clock;
  /** Runs `conntrack` to reconcile stale UDP/SCTP flows; omit to skip conntrack cleanup. */
  readonly conntrackRunner?: CommandRunner;
  /** Upstream forces a full sync this often even without changes (default 1 h). */
  readonly fullSyncPeriodMs?: number;
  /**
   * Called after every sync with the last successfully applied snapshot of each family (the
   * per-service health check servers follow it); errors are logged, never fatal.
   */
  readonly onApplied?: (states: readonly ProxyState[]) => Promise<void>;
  /** Syncs wait for this (start-up housekeeping: conntrack tuning, oomScoreAdj). */
  readonly syncAfter?: Promise<void>;
  /** When and how garbage is collected (see createMemoryReclaimer); default V8's exposed `gc()`. */
  readonly memory?: Omit<MemoryReclaimerOptions, "clock">;
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
  const { intake } = options;
  const tracker = intake.tracker;
  metrics.primeFamilies(backends.map((b) => b.family));
  const fullSyncPeriodMs = options.fullSyncPeriodMs ?? 60 * 60 * 1000;
  const flushed = new Set<IPFamily>();
  const reclaimer = createMemoryReclaimer({ ...options.memory, clock });
  const syncProxyRules = createSyncProxyRules({
    tracker,
    backends,
    metrics,
    health,
    logger,
    clock,
    ...(options.conntrackRunner ? { conntrackRunner: options.conntrackRunner } : {}),
    fullSyncPeriodMs,
    flushed,
    // What follows the rules (the first sync's leftover removal reads whole tables) starts from
    // a heap without the sync's garbage, so its own allocations reuse that space instead of
    // raising the peak on top of it.
    async onApplied(states) {
      reclaimer.synced();
      await options.onApplied?.(states);
    },
  });

  // Upstream 1.28+: syncs run on changes and at most hourly (a full sync then); syncPeriod
  // paces only the canary check below and the retry of a failed sync.
  /** The backends' start-up reads (see ProxyBackend.prepareFirstSync), once started. */
  let firstReads: Promise<void> | undefined;
  let firstReadsPending = false;
  const runner = new BoundedFrequencyRunner({
    name: "sync-runner",
    fn: async () => {
      try {
        await options.syncAfter;
        // The first sync's reads (if it waits for them) are done before the collection below.
        if (firstReadsPending && tracker.isSynced()) reclaimer.beforeFirstReads();
        await firstReads;
        if (tracker.isSynced()) reclaimer.beforeSync();
        await syncProxyRules();
      } finally {
        reclaimer.synced();
      }
    },
    minIntervalMs: options.minSyncPeriodMs,
    maxIntervalMs: Math.max(fullSyncPeriodMs, options.minSyncPeriodMs),
    maxRetryIntervalMs: options.syncPeriodMs,
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
      if (intake.apply(event) && tracker.isSynced()) queue();
    },
    onSynced(kind: ObjectKind) {
      tracker.markSynced(kind);
      if (tracker.isSynced()) queue();
    },
    onListed() {
      reclaimer.listed();
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
      for (const { backend } of backends) backend.start?.(signal);
      // The first sync's reads of the kernel run while the lists come in, once the start-up
      // housekeeping is done.
      firstReadsPending = true;
      firstReads = Promise.resolve(options.syncAfter).then(async () => {
        if (signal.aborted) return;
        await Promise.all(backends.map(({ backend }) => backend.prepareFirstSync?.()));
      }, () => {}).finally(() => firstReadsPending = false);
      watchCanaries(signal);
      signal.addEventListener("abort", () => reclaimer.stop());
      await source.start(signal);
      await stopped;
    },
  };
}
