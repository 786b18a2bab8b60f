/** The one small interface every proxy backend (iptables, ipvs, nftables) implements. */
import type { ProxyState } from "../proxy/types.ts";

/** What one applied sync did; feeds logs and metrics. */
export interface SyncReport {
  /** True for a full sync, false for a partial one. */
  readonly full: boolean;
  /** Rules per table after the sync (kubeproxy_sync_proxy_rules_iptables_total{table}). */
  readonly ruleCounts: Readonly<Record<string, number>>;
}

/** Counters a backend bumps; the real implementation lives in lib/metrics. */
export interface BackendMetrics {
  /** A restore (apply) of the full payload failed. */
  restoreFailure(): void;
  /** A restore of a partial payload failed. */
  partialRestoreFailure(): void;
}

/** A backend programs one IP family of the kernel from ProxyState snapshots. */
export interface ProxyBackend {
  /** The mode name, e.g. "iptables". */
  readonly name: string;
  /**
   * Applies the snapshot. On failure it counts and logs, leaves the old rules in place,
   * makes the next call a full sync, and throws (so the sync runner retries).
   */
  sync(state: ProxyState): Promise<SyncReport>;
  /**
   * True when someone removed our rules behind our back (the canary chains are gone), so the
   * caller must force a full sync.
   */
  rulesFlushed(): Promise<boolean>;
  /** Removes everything this backend (in any flavour) may have programmed; idempotent. */
  cleanup(): Promise<void>;
}
