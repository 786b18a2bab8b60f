/**
 * Upstream's ProxyHealthServer state: healthy while the last queued change was applied within
 * 2 x syncPeriod (and during startup, before anything was queued).
 */
import type { Clock } from "../sync/mod.ts";

/** Tracks when changes were queued and applied, to answer /healthz and /livez. */
export interface ProxyHealth {
  /** A change was queued for sync at `now` (only the first unapplied one counts). */
  queued(now: number): void;
  /** The rules were applied at `now`. */
  updated(now: number): void;
  /** Whether the proxy is healthy now, and the time of the last successful apply (0 = never). */
  status(): { healthy: boolean; lastUpdated: number; now: number };
}

/** Options for createProxyHealth. */
export interface ProxyHealthOptions {
  readonly syncPeriodMs: number;
  readonly clock: Clock;
}

/** Creates the health state. */
export function createProxyHealth(options: ProxyHealthOptions): ProxyHealth {
  let lastUpdated = 0;
  let oldestQueued = 0;
  const timeout = 2 * options.syncPeriodMs;
  return {
    queued(now) {
      if (oldestQueued === 0) oldestQueued = now;
    },
    updated(now) {
      lastUpdated = now;
      oldestQueued = 0;
    },
    status() {
      const now = options.clock.now();
      // Healthy when nothing waits, or what waits has not waited longer than 2 x syncPeriod.
      const healthy = oldestQueued === 0 || now - oldestQueued < timeout;
      return { healthy, lastUpdated, now };
    },
  };
}
