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
} from "../mod.ts";
import { CommandError, type CommandRunner, denoCommandRunner } from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";
import type { CIDR } from "../../net/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import { type Clock, systemClock, type TimerHandle } from "../../sync/mod.ts";
import { parseIptablesSave } from "../../netfilter/mod.ts";
import { iptablesBinaries, type IptablesFlavour, RESTORE_ARGS } from "../iptables/mod.ts";
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
import { parseLinkAddresses } from "./_link_addresses.ts";
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
  const runner = options.runner ?? denoCommandRunner;
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? NO_BACKEND_METRICS;
  const clock = options.clock ?? systemClock;
  const family = options.family;
  const bins = iptablesBinaries(family, options.flavour ?? "nft");
  const draining = new GracefulTerminationList();
  const failures: Record<string, number> = {};

  // Syncs and draining checks both read and write IPVS: one at a time.
  let queue: Promise<unknown> = Promise.resolve();
  const exclusive = <T>(fn: () => Promise<T>): Promise<T> => {
    const run = queue.then(fn, fn);
    queue = run.catch(() => {});
    return run;
  };

  /**
   * Runs a command; a failure is counted, logged with its stderr and thrown. `ipvsadm -R`
   * goes on past a line the kernel refuses and exits with the last line's status, so for it
   * any stderr output is a failure too.
   */
  const must = async (what: string, cmd: string, args: readonly string[], stdin?: string) => {
    const out = await runner(stdin === undefined ? { cmd, args } : { cmd, args, stdin });
    const restore = cmd === "ipvsadm" && args[0] === "-R";
    if (out.code === 0 && !(restore && out.stderr.trim() !== "")) return out.stdout;
    failures[what] = (failures[what] ?? 0) + 1;
    if (what === "iptables-restore") metrics.applyFailed(true);
    logger.error(`Failed to run ${what}`, { family, code: out.code, stderr: out.stderr.trim() });
    throw new CommandError(cmd, args, out.code === 0 ? 1 : out.code, out.stderr);
  };

  /** The desired state the last sync applied; null makes the next sync full. */
  let index: IpvsDesiredIndex | null = null;
  /** Our virtual servers as the kernel holds them (see kernel_view.ts). */
  let view: KernelView = new Map();
  /** The rule lines the last iptables-restore wrote. */
  let lastRules = "";

  const skippedLog = (skipped: readonly SkippedServicePort[]) => {
    for (const s of skipped) {
      logger.warn("Skipping service port with an untrusted value", {
        service: s.key,
        reason: s.reason,
      });
    }
  };
  /** Runs one `ip -batch -` input; nothing when it is empty. */
  const ipBatch = async (batch: string) => {
    if (batch !== "") await must("ip", "ip", ["-force", "-batch", "-"], batch);
  };
  /**
   * Turns `have` into `want` for the virtual servers `keys` with one `ipvsadm -R`, then records
   * the outcome in the drain list and the kernel view; returns how many lines it wrote.
   */
  const applyIpvs = async (
    want: IpvsTable,
    have: IpvsTable,
    keys: Iterable<string>,
    excludeCIDRs: readonly CIDR[],
  ): Promise<number> => {
    const diff = diffIpvs(want, have, { family, excludeCIDRs, draining });
    if (diff.lines.length > 0) {
      await must("ipvsadm", "ipvsadm", ["-R"], ipvsadmRestoreInput(diff.lines));
    }
    commitIpvsDiff(diff, draining);
    updateKernelView(view, keys, want, have, draining);
    return diff.lines.length;
  };
  const rulesText = (r: IpvsIptablesRules) => [...r.natRules, "", ...r.filterRules].join("\n");
  const report = (full: boolean, r: IpvsIptablesRules): SyncReport => ({
    full,
    counts: { nat: r.natRules.length, filter: r.filterRules.length },
  });

  /** Reads the kernel once, computes everything, applies the difference. */
  const fullSync = async (state: ProxyState): Promise<SyncReport> => {
    index = null;
    // No -4/-6: iproute2 would leave out a kube-ipvs0 holding only the other family's addresses.
    let links = parseLinkAddresses(await must("ip", "ip", ["-j", "addr", "show"]), family);
    if (!links.deviceExists) {
      await must("ip", "ip", ["link", "add", KUBE_IPVS_DEVICE, "type", "dummy"]);
      links = { ...links, deviceExists: true, bound: [] };
    }
    const config = resolveIpvsConfig(state, {
      ...options,
      nodeAddresses: options.nodeAddresses ?? links.node,
    });
    const next = IpvsDesiredIndex.of(state, config);
    const desired = next.desiredState();
    skippedLog(desired.skipped);

    const sets = parseIpsetSave(await must("ipset", "ipset", ["save"]));
    await must("ipset", "ipset", ["restore"], buildIpsetRestore(desired.ipsets, sets, family));

    const current = parseIpvsadmList(await must("ipvsadm", "ipvsadm", ["-Ln"])).table;
    view = new Map();
    const wanted = desired.virtualServers;
    const ipvsChanges = await applyIpvs(wanted, current, wanted.keys(), config.excludeCIDRs);

    const addresses = diffBoundAddresses(desired.boundAddresses, links.bound, family);
    await ipBatch(addressAddBatch(addresses.add));

    const saved = parseIptablesSave(await must("iptables-save", bins.save, []));
    const rules = renderIpvsIptablesRules(desired);
    await must(
      "iptables-restore",
      bins.restore,
      RESTORE_ARGS,
      buildIpvsRestoreInput(rules, missingIpvsJumps(saved)),
    );

    await ipBatch(addressDelBatch(addresses.del));
    lastRules = rulesText(rules);
    index = next;
    logger.debug(2, "Synced IPVS rules", {
      family,
      kind: "full",
      virtualServers: wanted.size,
      ipvsChanges,
      draining: draining.size,
    });
    return report(true, rules);
  };

  /**
   * Applies what the changed ports changed, diffed against the kernel view: reads nothing,
   * writes only what differs (an `iptables-restore` only when the rules changed).
   */
  const partialSync = async (current: IpvsDesiredIndex, delta: IpvsDelta): Promise<SyncReport> => {
    skippedLog(delta.skipped);
    const sets = buildIpsetDeltaRestore(delta.addMembers, delta.delMembers, family);
    if (sets !== "") await must("ipset", "ipset", ["restore"], sets);

    const have = viewSubset(view, delta.touched);
    const ipvsChanges = await applyIpvs(
      delta.virtualServers,
      have,
      delta.touched,
      current.config.excludeCIDRs,
    );
    await ipBatch(addressAddBatch(delta.bind));
    const rules = renderIpvsIptablesRules(current.ruleInputs());
    const text = rulesText(rules);
    if (text !== lastRules) {
      // The jumps from the built-in chains were ensured by the last full sync.
      await must("iptables-restore", bins.restore, RESTORE_ARGS, buildIpvsRestoreInput(rules, []));
      lastRules = text;
    }
    await ipBatch(addressDelBatch(delta.unbind));
    logger.debug(2, "Synced IPVS rules", {
      family,
      kind: "partial",
      changedVirtualServers: delta.touched.size,
      ipvsChanges,
      draining: draining.size,
    });
    return report(false, rules);
  };

  const syncOnce = async (state: ProxyState): Promise<SyncReport> => {
    if (state.family !== family) {
      throw new RangeError(
        `Invalid state family "${state.family}": this proxier handles "${family}"`,
      );
    }
    const current = index;
    if (current === null || state.forceFullSync) return await fullSync(state);
    index = null; // until the partial sync below has been applied
    const delta = current.update(state, state.changed);
    if (delta.needsFull) return await fullSync(state);
    const out = await partialSync(current, delta);
    index = current;
    return out;
  };

  const checkOnce = async (): Promise<void> => {
    if (draining.size === 0) return;
    const current = parseIpvsadmList(await must("ipvsadm", "ipvsadm", ["-Ln"])).table;
    const plan = planDrainCheck(draining, current);
    const keys = (e: DrainingRealServer) => [virtualServerKey(e.vs), realServerKey(e.rs)] as const;
    for (const e of plan.gone) {
      logger.debug(2, "Draining real server is already gone", {
        address: e.rs.address,
        port: e.rs.port,
      });
      draining.delete(...keys(e));
    }
    dropFromKernelView(view, plan.gone.map(keys));
    if (plan.lines.length === 0) return;
    await must("ipvsadm", "ipvsadm", ["-R"], ipvsadmRestoreInput(plan.lines));
    for (const e of plan.finished) draining.delete(...keys(e));
    dropFromKernelView(view, plan.finished.map(keys));
  };

  let timer: TimerHandle | null = null;
  const start = (signal: AbortSignal): void => {
    const interval = options.drainCheckIntervalMs ?? RS_CHECK_DELETE_INTERVAL_MS;
    const tick = () => {
      timer = null;
      if (signal.aborted) return;
      exclusive(checkOnce).catch((err) => {
        // The real servers stay at weight 0 and are checked again next time.
        metrics.cleanupFailed();
        logger.error("IPVS graceful termination check failed", { family, err });
      }).finally(() => {
        if (!signal.aborted) timer = clock.setTimeout(tick, interval);
      });
    };
    if (signal.aborted) return;
    timer = clock.setTimeout(tick, interval);
    signal.addEventListener("abort", () => {
      if (timer !== null) clock.clearTimeout(timer);
      timer = null;
    }, { once: true });
  };

  return {
    sync: (state) => exclusive(() => syncOnce(state)),
    // IPVS mode has no canary: as upstream, a full sync (with its reads) runs every syncPeriod.
    rulesFlushed: () => Promise.resolve(false),
    checkDraining: () => exclusive(checkOnce),
    start,
    draining,
    failures,
  };
}
