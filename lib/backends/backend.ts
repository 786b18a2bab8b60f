/** The one small interface every proxy backend (iptables, ipvs, nftables) implements. */
import type { IPFamily, ProxyState } from "../proxy/mod.ts";

/** What one applied sync did; feeds logs and metrics. */
export interface SyncReport {
  /** True for a full sync, false for a partial one. */
  readonly full: boolean;
  /**
   * Mode-specific counts that the mode's own metrics record and the sync log shows, e.g. rules
   * per table in iptables mode (kubeproxy_sync_proxy_rules_iptables_total{table}).
   */
  readonly counts: Readonly<Record<string, number>>;
  /**
   * What the sync wrote, where the mode counts it: rules per table of its restore input in
   * iptables mode (kubeproxy_sync_proxy_rules_iptables_last{table}).
   */
  readonly written?: Readonly<Record<string, number>>;
}

/** What a backend and the app tell a mode's own metrics (each mode registers its own set). */
export interface BackendMetrics {
  /** Applying a sync to the kernel failed; `full` says whether it was a full sync. */
  applyFailed(full: boolean): void;
  /** Removing stale objects failed (nftables mode counts this). */
  cleanupFailed(): void;
  /** A sync was applied in `seconds`. */
  synced(report: SyncReport, seconds: number): void;
}

/** Metrics that count nothing, for backends built without them (tests, `render`). */
export const NO_BACKEND_METRICS: BackendMetrics = {
  applyFailed: () => {},
  cleanupFailed: () => {},
  synced: () => {},
};

/** A backend programs one IP family of the kernel from ProxyState snapshots. */
export interface ProxyBackend {
  /**
   * Applies the snapshot. On failure it counts and logs, leaves the old rules in place,
   * makes the next call a full sync, and throws (so the sync runner retries).
   */
  sync(state: ProxyState): Promise<SyncReport>;
  /**
   * The periodic consistency check (upstream's canary): true when someone removed our rules
   * behind our back, so the caller must force a full sync. Kept cheap: it runs every syncPeriod.
   */
  rulesFlushed(): Promise<boolean>;
  /** Starts the backend's own loop, if it has one (IPVS: the drain check); returns at once. */
  start?(signal: AbortSignal): void;
  /**
   * Starts reading what the first sync needs from the kernel, while the initial lists are still
   * coming in; the first sync then uses that read instead of making its own. Returns at once;
   * a promise returned resolves (never rejects) once reads the first sync would wait for are
   * done, so the app can collect their garbage before the first sync renders.
   */
  prepareFirstSync?(): Promise<void> | void;
}

/** One backend bound to the IP family it programs, with its mode's metrics for that family. */
export interface FamilyBackend {
  readonly family: IPFamily;
  readonly backend: ProxyBackend;
  readonly metrics: BackendMetrics;
}
