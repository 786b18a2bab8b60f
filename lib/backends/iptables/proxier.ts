/**
 * The iptables backend for one IP family: renders each ProxyState and applies it with one
 * iptables-restore, full or partial as upstream decides.
 */
import {
  type BackendMetrics,
  NO_BACKEND_METRICS,
  type ProxyBackend,
  type SyncReport,
} from "../backend.ts";
import { CommandError, type CommandRunner, denoCommandRunner } from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import { ChainNameCache } from "./chain_name_cache.ts";
import { KUBE_PROXY_CANARY } from "./chain_names.ts";
import {
  IPTABLES_WAIT_ARGS,
  iptablesBinaries,
  type IptablesFlavour,
  RESTORE_ARGS,
} from "./flavour.ts";
import { heldAsRendered, type KernelChains } from "./kernel_chains.ts";
import type { LocalAddressLister } from "../../net/mod.ts";
import { type IptablesRenderSummary, renderIptables, renderIptablesSlices } from "./render.ts";
import type { IptablesRenderOptions } from "./render_options.ts";
import {
  buildRestorePayload,
  type RestorePlan,
  restoreTailChunks,
  type WrittenRules,
} from "./restore_payload.ts";
import { natLayout, type NatLayoutKind } from "./restore_layout.ts";
import type { OwnedLine } from "./rule_buffer.ts";
import { createTableReader, type TableFindings, type TableReads } from "./table_reads.ts";
import { linesByChain, type TopLevelDigests, topLevelWrite } from "./top_level_chains.ts";

/**
 * How to build an iptables proxier; everything but `family` has upstream's default. The
 * inherited `chainNames` defaults to a cache this proxier keeps for its lifetime.
 */
export interface IptablesProxierOptions extends IptablesRenderOptions {
  readonly family: IPFamily;
  readonly runner?: CommandRunner;
  /** Which binaries to run (see detectIptablesFlavour); default "nft". */
  readonly flavour?: IptablesFlavour;
  readonly logger?: Logger;
  readonly metrics?: BackendMetrics;
  /**
   * Reads the node's interface addresses before each sync, for nodePortAddresses CIDRs (as
   * upstream does). Without it, `localAddresses` or the node IPs stand in.
   */
  readonly listLocalAddresses?: LocalAddressLister;
  /**
   * Makes the nfacct objects the rules count into and says which exist, before every full
   * sync as upstream does (someone may have deleted one, and a rule naming a missing object
   * fails the restore). Absent where the node has no nfacct: the rules go without the match.
   */
  readonly ensureNfacct?: () => Promise<ReadonlySet<string>>;
}

/**
 * A full render is streamed into iptables-restore (see sync) only when the last one took less
 * than this: the restore holds the xtables lock from its first line, and legacy's `-w 5` fails
 * a read of stdin still waiting 5 s after it asked for the lock. Longer renders are made
 * before the restore starts, as a whole.
 */
const MAX_STREAMED_RENDER_MS = 1_000;

/** Before any render was timed: streamed up to this many endpoints (a render well under 1 s). */
const MAX_STREAMED_FIRST_ENDPOINTS = 30_000;

/** The table whose canary chain the periodic check reads (upstream's Monitor reads it first). */
const CANARY_TABLE = "mangle";

/** Creates the iptables backend of one family; does no I/O until sync() is called. */
export function createIptablesProxier(options: IptablesProxierOptions): ProxyBackend {
  const runner = options.runner ?? denoCommandRunner;
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? NO_BACKEND_METRICS;
  const flavour = options.flavour ?? "nft";
  const bins = iptablesBinaries(options.family, flavour);
  const chainNames = options.chainNames ?? new ChainNameCache();

  /** The kernel's tables are not known as our last restore left them: read them on the next sync. */
  let needFullSync = true;
  let synced = false;
  /**
   * A forced full sync wrote every chain from what we know the kernel holds, without reading it;
   * the next canary check reads the tables once for what only a read shows (see rulesFlushed).
   */
  let auditDue = false;
  /** Bumped when a sync starts and when it ends: odd while one runs (see audit). */
  let syncEpoch = 0;
  /** Per-service nat chains present in the kernel after the last successful restore. */
  let ownedChains: ReadonlySet<string> = new Set<string>();
  /** Digests of the top-level chains the last successful restore left in place. */
  let applied: TopLevelDigests | undefined;
  /** The nfacct objects the rules count into, as the last full sync found them. */
  let nfacctCounters: ReadonlySet<string> = new Set<string>();
  /** How long the last render took (its own CPU time, not the writes); none before the first. */
  let lastRenderMs: number | undefined;

  const reader = createTableReader(runner, flavour, bins);

  /**
   * The reads prepareFirstSync started, for the first sync only: at start the lists take longer
   * than the reads, which then no longer compete
   * with the first restore. Chains another program adds or removes in between are handled as
   * after any read: a KUBE chain that vanished fails the restore, which is retried as a full
   * sync with a fresh read.
   */
  let early: TableReads | undefined;
  const prepareFirstSync = (): Promise<void> | undefined => {
    if (synced || early !== undefined) return undefined;
    // With iptables-nft, nat read whole tells which of our chains a previous run left as this
    // one renders them (rewriting them costs far more than reading them; see keptFromBefore).
    early = reader.read(flavour === "nft");
    return early.natChains?.then(() => {}, () => {});
  };

  /** How this sync's nat lines go to the restore (see NatLayoutKind). */
  const layoutOf = (state: ProxyState): NatLayoutKind => {
    const streamed = lastRenderMs === undefined
      ? state.totalEndpoints <= MAX_STREAMED_FIRST_ENDPOINTS
      : lastRenderMs < MAX_STREAMED_RENDER_MS;
    return streamed ? "streamed" : "held";
  };

  /**
   * The first sync's diff against what a previous run left (see kernel_chains.ts): which
   * service ports' chains and which top-level nat chains the kernel holds as rendered. Only
   * once a previous run's KUBE-SERVICES is there; on a new node everything is written.
   */
  const keptFromBefore = (kernel: KernelChains | undefined) => {
    if (kernel === undefined || !kernel.declaresServices) return undefined;
    const held = (lines: readonly string[]) => heldAsRendered(lines, kernel, options.family);
    return {
      /** Adds to `include` the owners in `lines` whose chains the kernel lacks or differ. */
      slice(lines: readonly OwnedLine[], include: Set<string>) {
        const byOwner = new Map<string, string[]>();
        for (const line of lines) {
          if (line.owner === null) continue;
          let list = byOwner.get(line.owner);
          if (list === undefined) byOwner.set(line.owner, list = []);
          list.push(line.text);
        }
        for (const [owner, own] of byOwner) if (!held(own)) include.add(owner);
      },
      /** The lines of the top-level nat chains the kernel does not hold as rendered. */
      topLevel(topLevelNat: readonly string[]): string[] {
        const out: string[] = [];
        for (const chainLines of linesByChain(topLevelNat).values()) {
          if (!held(chainLines)) out.push(...chainLines);
        }
        return out;
      },
    };
  };

  /** The render options, with this sync's interface addresses when CIDRs must be resolved. */
  const withLocalAddresses = async (state: ProxyState): Promise<IptablesRenderOptions> => {
    const lister = options.listLocalAddresses;
    const cidrs = (options.nodePortAddresses ?? []).filter((a) => a !== "primary");
    if (lister === undefined || cidrs.length === 0) {
      return { ...options, chainNames, nfacctCounters };
    }
    try {
      const found = await lister(state.family);
      const localAddresses = [...new Set([...found, ...state.node.ips])];
      return { ...options, chainNames, nfacctCounters, localAddresses };
    } catch (err) {
      // Upstream logs and goes on with what it has; NodePorts on the node IPs still work.
      logger.error("Failed to list the node's addresses for nodePortAddresses", {
        family: state.family,
        err,
      });
      return { ...options, chainNames, nfacctCounters };
    }
  };

  const sync = async (state: ProxyState): Promise<SyncReport> => {
    if (state.family !== options.family) {
      throw new RangeError(
        `Invalid state family "${state.family}": this proxier handles "${options.family}"`,
      );
    }
    syncEpoch++;
    try {
      return await syncState(state);
    } finally {
      syncEpoch++;
    }
  };

  const syncState = async (state: ProxyState): Promise<SyncReport> => {
    const full = needFullSync || state.forceFullSync;
    // A forced full sync (hourly, or the node changed) after a successful restore rewrites every
    // chain from what that restore left, with no read beside it: with legacy iptables a read of
    // nat costs O(table) and takes a core from the restore. Jumps someone deleted and chains
    // someone added are what only a read shows; the next canary check reads for them.
    const readsTables = needFullSync;
    // Every render names every chain: up to four per service port, one per endpoint.
    chainNames.fit(4 * state.services.size + state.totalEndpoints);
    // A partial sync writes the chains of changed service ports, plus those of any service
    // port owning a chain we have not programmed (yet); the rest are only named and counted.
    const include = new Set<string>();
    // The first sync of a process leaves alone the chains a previous run left as they render.
    let kept: ReturnType<typeof keptFromBefore>;
    if (readsTables && early?.natChains !== undefined) {
      // A failed read fails the sync where its findings are needed (the tail).
      kept = keptFromBefore(await early.natChains.catch(() => undefined));
    }
    const writeServiceChains = (key: string, chains: readonly string[]): boolean => {
      if (!full && !state.changed.has(key) && chains.every((c) => ownedChains.has(c))) {
        return false;
      }
      // With `kept`, each slice decides once its lines are rendered.
      if (kept === undefined) include.add(key);
      return true;
    };
    if (full && options.ensureNfacct !== undefined) {
      try {
        nfacctCounters = await options.ensureNfacct();
      } catch (err) {
        // Without the objects the matches would fail the restore: leave them out this time.
        nfacctCounters = new Set();
        logger.error("Failed to ensure the nfacct counters; rules go without them", { err });
      }
    }
    const renderOptions = await withLocalAddresses(state);
    let tables: TableReads | undefined;
    let rules: IptablesRenderSummary | undefined;
    let readFailed = false;
    let plan: RestorePlan | undefined;
    let digests: TopLevelDigests | undefined;
    // Counted as the input is made: what reaches the restore, partial or left in place alike.
    const written: WrittenRules = { nat: 0, filter: 0 };

    // The input is made while iptables-restore runs: a full sync's reads of the tables start
    // once the restore has started (both spawns block this thread), the restore takes the lock
    // and reads the nat table while the first slices render, and (streamed) parses each slice
    // as it comes; only the tail waits for the reads.
    async function* input(): AsyncGenerator<string> {
      const body = {
        includeService: (k: string) => include.has(k),
        canary: full,
        writeTopLevel: full && kept === undefined,
      };
      const topLevelNat: string[] = [];
      const nat = natLayout(layoutOf(state), body, {
        sortDeclarations: flavour === "nft",
        written,
      });
      const head = nat.head();
      if (head !== undefined) yield head;
      if (readsTables) tables = early ?? reader.read();
      early = undefined;
      const slices = renderIptablesSlices(state, renderOptions, { writeServiceChains });
      let renderMs = 0;
      const nextSlice = () => {
        const started = performance.now();
        const next = slices.next();
        renderMs += performance.now() - started;
        return next;
      };
      let next = nextSlice();
      for (; !next.done; next = nextSlice()) {
        for (const line of next.value) if (line.owner === null) topLevelNat.push(line.text);
        kept?.slice(next.value, include);
        const text = nat.slice(next.value);
        if (text !== undefined) yield text;
      }
      const r = rules = next.value;
      lastRenderMs = renderMs;
      for (const s of r.skipped) {
        logger.warn("Skipping service port with an untrusted value", {
          service: s.key,
          reason: s.reason,
        });
      }
      logger.debug(2, "Reloading service iptables data", {
        family: options.family,
        full,
        numServices: state.services.size,
        numEndpoints: state.totalEndpoints,
        numNATRules: r.ruleCounts.nat,
        numFilterRules: r.ruleCounts.filter,
      });
      yield* nat.held();
      // A partial sync writes the top-level chains (and the filter table) only if they changed.
      const top = topLevelWrite(topLevelNat, [...r.filterChains, ...r.filterRules], applied, full);
      digests = top.digests;
      let findings: TableFindings;
      try {
        findings = tables !== undefined ? await reader.findings(tables, r.activeNatChains) : {
          staleNatChains: [...ownedChains].filter((c) => !r.activeNatChains.has(c)).sort(),
          jumps: [],
          declareKubeletFirewall: false,
        };
      } catch (err) {
        readFailed = true;
        throw err;
      }
      const { writeFilter } = top;
      const changedTopLevelNat = kept?.topLevel(topLevelNat) ?? top.changedTopLevelNat;
      if (kept !== undefined) {
        logger.debug(2, "Left in place the nat chains a previous run wrote as rendered", {
          family: options.family,
          servicePorts: state.services.size - include.size,
          topLevelLines: topLevelNat.length - changedTopLevelNat.length,
        });
      }
      plan = { ...body, ...findings, changedTopLevelNat, writeFilter };
      yield* restoreTailChunks(r, plan, written);
    }

    let out;
    try {
      out = await runner({ cmd: bins.restore, args: RESTORE_ARGS, stdinStream: input() });
    } catch (err) {
      needFullSync = true;
      if (readFailed) {
        logger.error("Failed to read the current iptables rules", { family: options.family, err });
      }
      throw err;
    }
    if (plan !== undefined) {
      const p = plan;
      // Rendered again and joined only if a verbosity-9 log line is actually written.
      const again = () =>
        renderIptables(state, renderOptions, { writeServiceChains: (k) => include.has(k) });
      logger.debug(9, "Restored iptables", {
        rules: { toJSON: () => buildRestorePayload(again(), p) },
      });
    }
    if (out.code !== 0) {
      metrics.applyFailed(full);
      needFullSync = true;
      logger.error("Failed to execute iptables-restore", {
        family: options.family,
        full,
        code: out.code,
        stderr: out.stderr.trim(),
      });
      throw new CommandError(bins.restore, RESTORE_ARGS, out.code, out.stderr);
    }
    if (rules === undefined || plan === undefined || digests === undefined) {
      needFullSync = true;
      throw new Error(`${bins.restore} exited 0 without reading all its input`);
    }
    needFullSync = false;
    synced = true;
    if (full) auditDue = !readsTables;
    ownedChains = rules.activeNatChains; // a fresh set per render, never changed after
    applied = digests;
    return {
      full,
      counts: { nat: rules.ruleCounts.nat, filter: rules.ruleCounts.filter },
      written: { nat: written.nat, filter: written.filter },
    };
  };

  /**
   * Upstream's canary monitor: only the small mangle table's canary is read each syncPeriod
   * (with legacy iptables, reading nat or filter costs O(rules)); a firewall reload flushes it
   * along with the others, and the full sync that follows rewrites every table. Once after
   * each full sync that did not read the tables, the check also reads them (see audit).
   */
  const rulesFlushed = async (): Promise<boolean> => {
    if (!synced) return false;
    const args = [...IPTABLES_WAIT_ARGS.slice(0, 2), "-t", CANARY_TABLE, "-S", KUBE_PROXY_CANARY];
    const out = await runner({ cmd: bins.iptables, args });
    if (out.code === 1) {
      logger.info("iptables canary chain is gone, rules were flushed", {
        family: options.family,
        table: CANARY_TABLE,
      });
      needFullSync = true;
      return true;
    }
    if (out.code !== 0) throw new CommandError(bins.iptables, args, out.code, out.stderr);
    return auditDue ? await audit() : false;
  };

  /**
   * After a full sync that did not read the tables: reads nat and filter once, as a full sync
   * with reads would, and asks for one when a jump is missing or a service chain we did not
   * write is there. A sync running during the read may have changed either: checked next time.
   */
  const audit = async (): Promise<boolean> => {
    const epoch = syncEpoch;
    const found = await reader.findings(reader.read(), ownedChains);
    if (epoch !== syncEpoch || epoch % 2 === 1) return false;
    auditDue = false;
    const { staleNatChains: stale, jumps } = found;
    if (stale.length === 0 && jumps.length === 0 && !found.declareKubeletFirewall) return false;
    logger.info("iptables rules changed behind our back, forcing a full sync", {
      family: options.family,
      missingJumps: jumps.map((j) => `${j.table} ${j.srcChain} -j ${j.dstChain}`),
      unknownChains: stale.length,
    });
    needFullSync = true;
    return true;
  };

  return { sync, rulesFlushed, prepareFirstSync };
}
