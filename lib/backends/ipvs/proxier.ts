/**
 * The IPVS backend of one family. A full sync (the first, every --ipvs-sync-period as
 * upstream's runner, and after any failure) reads the kernel once (`ip -j addr show`,
 * `ipset save`, `ipvsadm -Ln`, `iptables-save`), computes the desired state and applies only
 * the difference, batched: `ipset restore`, `ipvsadm -R`, `ip -batch -` (additions),
 * `iptables-restore --noflush`, `ip -batch -` (removals). A sync driven by changed ports
 * recomputes only their shares and diffs them against what the last full read and the writes
 * since left (kernel_view.ts), reading nothing. Nothing is deleted on failure, and the sync
 * after a failure is full. A separate check (every minute by default) deletes drained real
 * servers.
 */
import type { SkippedServicePort } from "../../proxy/mod.ts";
import {
  type BackendMetrics,
  NO_BACKEND_METRICS,
  type ProxyBackend,
  type SyncReport,
} from "../backend.ts";
import { CommandError, type CommandRunner, denoCommandRunner } from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";
import type { CIDR } from "../../net/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import { type Clock, systemClock, type TimerHandle } from "../../sync/mod.ts";
import {
  type IptablesBinaries,
  iptablesBinaries,
  type IptablesFlavour,
  parseIptablesSave,
  RESTORE_ARGS,
} from "../../netfilter/mod.ts";
import { addressAddBatch, addressDelBatch, diffBoundAddresses } from "./_address_diff.ts";
import { KUBE_IPVS_DEVICE } from "./cleanup.ts";
import { type IpvsDelta, IpvsDesiredIndex } from "./_desired_index.ts";
import {
  type DrainingRealServer,
  GracefulTerminationList,
  planDrainCheck,
  RS_CHECK_DELETE_INTERVAL_MS,
} from "./_graceful_termination.ts";
import { buildIpsetDeltaRestore, buildIpsetRestore } from "./_ipset_diff.ts";
import { parseIpsetSave } from "./_ipset_parser.ts";
import { commitIpvsDiff, diffIpvs, ipvsadmRestoreInput } from "./_ipvs_diff.ts";
import { type IpvsOptions, resolveIpvsConfig } from "./ipvs_options.ts";
import {
  dropFromKernelView,
  type KernelView,
  updateKernelView,
  viewSubset,
} from "./_kernel_view.ts";
import { parseIpvsadmList } from "./ipvsadm_parser.ts";
import { type LinkAddresses, parseLinkAddresses } from "./_link_addresses.ts";
import { type IpvsTable, realServerKey, virtualServerKey } from "./virtual_server.ts";
import {
  buildIpvsRestoreInput,
  type IpvsIptablesRules,
  missingIpvsJumps,
  renderIpvsIptablesRules,
} from "./render_iptables.ts";

/** How to build an IPVS proxier; everything but `family` has a real default. */
export interface IpvsProxierOptions extends IpvsOptions {
  readonly family: IPFamily;
  readonly runner?: CommandRunner;
  readonly logger?: Logger;
  readonly metrics?: BackendMetrics;
  readonly clock?: Clock;
  /** Which iptables binaries to run; default "nft". */
  readonly flavour?: IptablesFlavour;
  /** How often drained real servers are checked (default 1 minute, as upstream). */
  readonly drainCheckIntervalMs?: number;
}

/** The IPVS backend: a ProxyBackend plus the draining check and its loop. */
export interface IpvsProxier extends ProxyBackend {
  /** Deletes draining real servers that have no connections left; runs between syncs. */
  checkDraining(): Promise<void>;
  /** Runs checkDraining every interval until `signal` aborts. Returns at once. */
  start(signal: AbortSignal): void;
  /** Real servers currently draining (weight 0). */
  readonly draining: GracefulTerminationList;
  /** Failed applies per command since creation (ipset, ipvsadm, ip, iptables-restore). */
  readonly failures: Readonly<Record<string, number>>;
}

/** Creates the IPVS backend of one family; does no I/O until sync() or start() is called. */
export function createIpvsProxier(options: IpvsProxierOptions): IpvsProxier {
  return new IpvsFamilyProxier(options);
}

/** The rule lines of one render, as the last iptables-restore is remembered. */
function rulesText(r: IpvsIptablesRules): string {
  return [...r.natRules, "", ...r.filterRules].join("\n");
}

/** What a sync reports: full or partial, and the rule lines it rendered per table. */
function syncReport(full: boolean, r: IpvsIptablesRules): SyncReport {
  return { full, counts: { nat: r.natRules.length, filter: r.filterRules.length } };
}

/** Which virtual server and real server a draining entry names, as the drain list keys them. */
function drainKeys(e: DrainingRealServer): readonly [string, string] {
  return [virtualServerKey(e.vs), realServerKey(e.rs)] as const;
}

/**
 * The IPVS proxier of one family (upstream's ipvs Proxier struct): what the last sync applied,
 * what it knows the kernel holds, and the real servers draining.
 */
class IpvsFamilyProxier implements IpvsProxier {
  /** Real servers at weight 0 whose connections still run; the drain check deletes them. */
  readonly draining = new GracefulTerminationList();
  /** Failed applies per command since creation. */
  readonly failures: Record<string, number> = {};
  readonly #options: IpvsProxierOptions;
  readonly #family: IPFamily;
  readonly #runner: CommandRunner;
  readonly #logger: Logger;
  readonly #metrics: BackendMetrics;
  readonly #clock: Clock;
  readonly #bins: IptablesBinaries;
  /** The last sync or drain check queued: both read and write IPVS, so they run one at a time. */
  #queue: Promise<unknown> = Promise.resolve();
  /**
   * The desired state the last sync applied; null before the first sync, during one and after a
   * failed one, so that the next sync reads the kernel and is full.
   */
  #applied: IpvsDesiredIndex | null = null;
  /** Our virtual servers as the kernel holds them (see kernel_view.ts). */
  #kernelView: KernelView = new Map();
  /** The rule lines the last iptables-restore wrote. */
  #lastRules = "";
  /** The pending drain check, while the loop start() began runs. */
  #drainTimer: TimerHandle | null = null;

  constructor(options: IpvsProxierOptions) {
    this.#options = options;
    this.#family = options.family;
    this.#runner = options.runner ?? denoCommandRunner;
    this.#logger = options.logger ?? silentLogger;
    this.#metrics = options.metrics ?? NO_BACKEND_METRICS;
    this.#clock = options.clock ?? systemClock;
    this.#bins = iptablesBinaries(options.family, options.flavour ?? "nft");
  }

  sync(state: ProxyState): Promise<SyncReport> {
    return this.#exclusive(() => this.#syncOnce(state));
  }

  // IPVS mode has no canary: as upstream, a full sync (with its reads) runs every syncPeriod.
  rulesFlushed(): Promise<boolean> {
    return Promise.resolve(false);
  }

  checkDraining(): Promise<void> {
    return this.#exclusive(() => this.#checkDrainingOnce());
  }

  start(signal: AbortSignal): void {
    const interval = this.#options.drainCheckIntervalMs ?? RS_CHECK_DELETE_INTERVAL_MS;
    if (signal.aborted) return;
    this.#drainTimer = this.#clock.setTimeout(() => this.#drainTick(signal, interval), interval);
    signal.addEventListener("abort", () => {
      if (this.#drainTimer !== null) this.#clock.clearTimeout(this.#drainTimer);
      this.#drainTimer = null;
    }, { once: true });
  }

  /** One turn of the drain loop: a check, then the next one `interval` later. */
  #drainTick(signal: AbortSignal, interval: number): void {
    this.#drainTimer = null;
    if (signal.aborted) return;
    this.checkDraining().catch((err) => {
      // The real servers stay at weight 0 and are checked again next time.
      this.#metrics.cleanupFailed();
      this.#logger.error("IPVS graceful termination check failed", { family: this.#family, err });
    }).finally(() => {
      if (!signal.aborted) {
        this.#drainTimer = this.#clock.setTimeout(
          () => this.#drainTick(signal, interval),
          interval,
        );
      }
    });
  }

  /** Runs `fn` after every sync and drain check queued before it, whether they failed or not. */
  #exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => {});
    return run;
  }

  /**
   * Runs a command; a failure is counted, logged with its stderr and thrown. `ipvsadm -R`
   * goes on past a line the kernel refuses and exits with the last line's status, so for it
   * any stderr output is a failure too.
   */
  async #must(what: string, cmd: string, args: readonly string[], stdin?: string) {
    const out = await this.#runner(stdin === undefined ? { cmd, args } : { cmd, args, stdin });
    const restore = cmd === "ipvsadm" && args[0] === "-R";
    if (out.code === 0 && !(restore && out.stderr.trim() !== "")) return out.stdout;
    this.failures[what] = (this.failures[what] ?? 0) + 1;
    if (what === "iptables-restore") this.#metrics.applyFailed(true);
    this.#logger.error(`Failed to run ${what}`, {
      family: this.#family,
      code: out.code,
      stderr: out.stderr.trim(),
    });
    throw new CommandError(cmd, args, out.code === 0 ? 1 : out.code, out.stderr);
  }

  /** Runs one `ip -batch -` input; nothing when it is empty. */
  async #ipBatch(batch: string): Promise<void> {
    if (batch !== "") await this.#must("ip", "ip", ["-force", "-batch", "-"], batch);
  }

  #logSkipped(skipped: readonly SkippedServicePort[]): void {
    for (const s of skipped) {
      this.#logger.warn("Skipping service port with an untrusted value", {
        service: s.key,
        reason: s.reason,
      });
    }
  }

  async #syncOnce(state: ProxyState): Promise<SyncReport> {
    const family = this.#family;
    if (state.family !== family) {
      throw new RangeError(
        `Invalid state family "${state.family}": this proxier handles "${family}"`,
      );
    }
    const current = this.#applied;
    if (current === null || state.forceFullSync) return await this.#fullSync(state);
    this.#applied = null; // until the partial sync below has been applied
    const delta = current.update(state, state.changed);
    if (delta.needsFull) return await this.#fullSync(state);
    const out = await this.#partialSync(current, delta);
    this.#applied = current;
    return out;
  }

  /** The node's addresses and what kube-ipvs0 holds, creating kube-ipvs0 when it is missing. */
  async #readLinks(): Promise<LinkAddresses> {
    // No -4/-6: iproute2 would leave out a kube-ipvs0 holding only the other family's addresses.
    const links = parseLinkAddresses(
      await this.#must("ip", "ip", ["-j", "addr", "show"]),
      this.#family,
    );
    if (links.deviceExists) return links;
    await this.#must("ip", "ip", ["link", "add", KUBE_IPVS_DEVICE, "type", "dummy"]);
    return { ...links, deviceExists: true, bound: [] };
  }

  /** Reads the kernel once, computes everything, applies the difference. */
  async #fullSync(state: ProxyState): Promise<SyncReport> {
    const family = this.#family;
    this.#applied = null;
    const links = await this.#readLinks();
    const config = resolveIpvsConfig(state, {
      ...this.#options,
      nodeAddresses: this.#options.nodeAddresses ?? links.node,
    });
    const next = IpvsDesiredIndex.of(state, config);
    const desired = next.desiredState();
    this.#logSkipped(desired.skipped);

    const sets = parseIpsetSave(await this.#must("ipset", "ipset", ["save"]));
    await this.#must(
      "ipset",
      "ipset",
      ["restore"],
      buildIpsetRestore(desired.ipsets, sets, family),
    );

    const current = parseIpvsadmList(await this.#must("ipvsadm", "ipvsadm", ["-Ln"])).table;
    this.#kernelView = new Map();
    const wanted = desired.virtualServers;
    const ipvsChanges = await this.#applyIpvs(wanted, current, wanted.keys(), config.excludeCIDRs);

    const addresses = diffBoundAddresses(desired.boundAddresses, links.bound, family);
    await this.#ipBatch(addressAddBatch(addresses.add));

    const saved = parseIptablesSave(await this.#must("iptables-save", this.#bins.save, []));
    const rules = renderIpvsIptablesRules(desired);
    await this.#must(
      "iptables-restore",
      this.#bins.restore,
      RESTORE_ARGS,
      buildIpvsRestoreInput(rules, missingIpvsJumps(saved)),
    );

    await this.#ipBatch(addressDelBatch(addresses.del));
    this.#lastRules = rulesText(rules);
    this.#applied = next;
    this.#logger.debug(2, "Synced IPVS rules", {
      family,
      kind: "full",
      virtualServers: wanted.size,
      ipvsChanges,
      draining: this.draining.size,
    });
    return syncReport(true, rules);
  }

  /**
   * Applies what the changed ports changed, diffed against the kernel view: reads nothing,
   * writes only what differs (an `iptables-restore` only when the rules changed).
   */
  async #partialSync(current: IpvsDesiredIndex, delta: IpvsDelta): Promise<SyncReport> {
    const family = this.#family;
    this.#logSkipped(delta.skipped);
    const sets = buildIpsetDeltaRestore(delta.addMembers, delta.delMembers, family);
    if (sets !== "") await this.#must("ipset", "ipset", ["restore"], sets);

    const have = viewSubset(this.#kernelView, delta.touched);
    const ipvsChanges = await this.#applyIpvs(
      delta.virtualServers,
      have,
      delta.touched,
      current.config.excludeCIDRs,
    );
    await this.#ipBatch(addressAddBatch(delta.bind));
    const rules = renderIpvsIptablesRules(current.ruleInputs());
    const text = rulesText(rules);
    if (text !== this.#lastRules) {
      // The jumps from the built-in chains were ensured by the last full sync.
      const input = buildIpvsRestoreInput(rules, []);
      await this.#must("iptables-restore", this.#bins.restore, RESTORE_ARGS, input);
      this.#lastRules = text;
    }
    await this.#ipBatch(addressDelBatch(delta.unbind));
    this.#logger.debug(2, "Synced IPVS rules", {
      family,
      kind: "partial",
      changedVirtualServers: delta.touched.size,
      ipvsChanges,
      draining: this.draining.size,
    });
    return syncReport(false, rules);
  }

  /**
   * Turns `have` into `want` for the virtual servers `keys` with one `ipvsadm -R`, then records
   * the outcome in the drain list and the kernel view; returns how many lines it wrote.
   */
  async #applyIpvs(
    want: IpvsTable,
    have: IpvsTable,
    keys: Iterable<string>,
    excludeCIDRs: readonly CIDR[],
  ): Promise<number> {
    const draining = this.draining;
    const diff = diffIpvs(want, have, { family: this.#family, excludeCIDRs, draining });
    if (diff.lines.length > 0) {
      await this.#must("ipvsadm", "ipvsadm", ["-R"], ipvsadmRestoreInput(diff.lines));
    }
    commitIpvsDiff(diff, draining);
    updateKernelView(this.#kernelView, keys, want, have, draining);
    return diff.lines.length;
  }

  /** Deletes the draining real servers that are gone or have no connections left. */
  async #checkDrainingOnce(): Promise<void> {
    const draining = this.draining;
    if (draining.size === 0) return;
    const current = parseIpvsadmList(await this.#must("ipvsadm", "ipvsadm", ["-Ln"])).table;
    const plan = planDrainCheck(draining, current);
    for (const e of plan.gone) {
      this.#logger.debug(2, "Draining real server is already gone", {
        address: e.rs.address,
        port: e.rs.port,
      });
      draining.delete(...drainKeys(e));
    }
    dropFromKernelView(this.#kernelView, plan.gone.map(drainKeys));
    if (plan.lines.length === 0) return;
    await this.#must("ipvsadm", "ipvsadm", ["-R"], ipvsadmRestoreInput(plan.lines));
    for (const e of plan.finished) draining.delete(...drainKeys(e));
    dropFromKernelView(this.#kernelView, plan.finished.map(drainKeys));
  }
}
