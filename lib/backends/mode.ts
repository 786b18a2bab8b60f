/**
 * What a proxy mode (iptables, ipvs, nftables) offers the app, `render` and `--cleanup`: the
 * only door through which anything outside lib/backends/<mode>/ reaches a mode. Each mode's
 * folder face exports one ProxyMode object; the rest of the mode is reached through it.
 */
import type { ModeConfigSection, ProxyConfig, ProxyModeName } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { Registry } from "../metrics/mod.ts";
import type { ModeTracer } from "../trace/mod.ts";
import type { IPFamily, ProxyState } from "../proxy/mod.ts";
import type { BackendMetrics, FamilyBackend } from "./backend.ts";

/** The modes, by the names `--proxy-mode` takes. */
export type { ProxyModeName };

/**
 * A mode cannot run: exit code 1 when the mode or its settings are unusable in this build,
 * 2 when the node lacks what the mode needs (binaries, kernel features).
 */
export class ModeUnavailableError extends Error {
  /** `exitCode` is the process exit code the app ends with. */
  constructor(message: string, readonly exitCode: 1 | 2) {
    super(message);
    this.name = "ModeUnavailableError";
  }
}

/** What a mode's start and cleanup get from the app. */
export interface ModeContext {
  readonly config: ProxyConfig;
  readonly runner: CommandRunner;
  readonly logger: Logger;
}

/**
 * Packet counters the kernel keeps for a mode's own metrics, read at scrape time (iptables
 * mode's nfacct objects).
 */
export interface PacketCounters {
  /** Packets per kernel object name, for the objects that exist; throws when unreadable. */
  read(): Promise<ReadonlyMap<string, number>>;
}

/** Gives each family's backend its mode metrics, labelled with that family. */
export type BackendMetricsFor = (family: IPFamily) => BackendMetrics;

/** What some modes' metrics read besides the backends' reports. */
export interface ModeMetricsExtras {
  /** The kernel's packet counters (iptables mode: nfacct); absent where the node has none. */
  readonly packetCounters?: PacketCounters;
  /** Where a counter that cannot be read is reported. */
  readonly logger?: Logger;
}

/** A mode whose start checks passed on this node. */
export interface PreparedMode {
  /** The IP families this node can proxy in this mode. */
  readonly families: readonly IPFamily[];
  /** Details for the mode's start log line (e.g. the iptables flavour). */
  readonly details: Readonly<Record<string, unknown>>;
  /**
   * How often a sync is made full without changes: upstream's runner maximum. Absent: hourly
   * (iptables and nftables 1.28+, where syncPeriod paces only the canary check).
   */
  readonly fullSyncPeriodMs?: number;
  /** The kernel's packet counters the mode's metrics read; absent where the node has none. */
  readonly packetCounters?: PacketCounters;
  /** One backend per family; `metricsFor` gives each family's backend its mode metrics. */
  createBackends(metricsFor: (family: IPFamily) => BackendMetrics): FamilyBackend[];
}

/** One proxy mode: what the registry lists for its name. */
export interface ModeDefinition {
  readonly name: ProxyModeName;
  /** The line logged at start, as upstream logs it ("Using iptables proxy"). */
  readonly startMessage: string;
  /**
   * Checks the node can run the mode and sets up what it needs once (sysctls). Throws
   * ModeUnavailableError naming what is missing.
   */
  prepare(context: ModeContext): Promise<PreparedMode>;
  /**
   * What the mode would apply on an empty node for these snapshots (one per family that has
   * services), as text for `render`. Pure; throws ModeUnavailableError for bad settings.
   */
  render(config: ProxyConfig, states: readonly ProxyState[]): string;
  /**
   * Registers the mode's own metrics on `registry`, as upstream's RegisterMetrics switches on
   * the mode. Each call of the result gives one family's backend its handles and makes that
   * family's series present at 0.
   */
  registerMetrics(registry: Registry, extras: ModeMetricsExtras): BackendMetricsFor;
  /** Follows a packet through the mode's rules, read from the kernel or rendered (`trace`). */
  // deno-lint-ignore no-explicit-any
  readonly tracer: ModeTracer<any>;
}

/** Removes a mode's state from the node; absent state is success, failures throw. */
export type ModeCleanup = (runner: CommandRunner, logger: Logger) => Promise<void>;

/**
 * One proxy mode as the registry lists it: what its folder's face exports. Its name and config
 * section come with it (every start validates the configuration before picking a mode); the
 * mode itself and its cleanups load their modules on first use, so a node loads only the mode
 * it runs and, for another mode's leftovers, only that mode's cleanup.
 */
export interface ProxyMode<M extends ProxyModeName = ProxyModeName> {
  readonly name: M;
  /** The mode's config section, which lib/config's parsing and validation take as options. */
  readonly configSection: ModeConfigSection<M>;
  /** The mode's backend, render, metrics and tracer. */
  load(): Promise<ModeDefinition>;
  /** Removes the mode's state from the node (`--cleanup`). */
  readonly cleanup: ModeCleanup;
  /**
   * How starting this mode removes another mode's leftovers where that mode's cleanup would
   * remove too much (IPVS mode keeps the iptables chains it shares with iptables mode).
   */
  readonly removesLeftoversOf?: Readonly<Partial<Record<ProxyModeName, ModeCleanup>>>;
  /**
   * How this mode's leftovers are removed when another mode starts, where its cleanup is not
   * enough (IPVS mode hands the flows it carried over to the running mode first).
   */
  readonly leftoversWhen?: Readonly<Partial<Record<ProxyModeName, ModeCleanup>>>;
}
