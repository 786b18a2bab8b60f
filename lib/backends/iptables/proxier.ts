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
import { type KeptChains, keptFromBefore } from "./_kept_chains.ts";
import { logRestored, restoreInput, type SyncRun } from "./_sync_run.ts";
import { ChainNameCache } from "./chain_name_cache.ts";
import { KUBE_PROXY_CANARY } from "./chain_names.ts";
import {
  IPTABLES_WAIT_ARGS,
  type IptablesBinaries,
  iptablesBinaries,
  type IptablesFlavour,
  RESTORE_ARGS,
} from "../../netfilter/mod.ts";
import type { LocalAddressLister } from "../../net/mod.ts";
import type { IptablesRenderOptions } from "./render_options.ts";
import type { NatLayoutKind } from "./restore_layout.ts";
import { createTableReader, type TableReader, type TableReads } from "./table_reads.ts";
import type { TopLevelDigests } from "./top_level_chains.ts";

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
  return new IptablesProxier(options);
}

/** The iptables proxier of one family (upstream's iptables Proxier struct). */
class IptablesProxier implements ProxyBackend {
  readonly #options: IptablesProxierOptions;
  readonly #family: IPFamily;
  readonly #runner: CommandRunner;
  readonly #logger: Logger;
  readonly #metrics: BackendMetrics;
  readonly #flavour: IptablesFlavour;
  readonly #bins: IptablesBinaries;
  readonly #chainNames: ChainNameCache;
  readonly #reader: TableReader;

  /** The kernel's tables are not known as our last restore left them: read them on the next sync. */
  #needFullSync = true;
  /** A restore succeeded, so the canary is ours to check. */
  #synced = false;
  /**
   * A forced full sync wrote every chain from what we know the kernel holds, without reading it;
   * the next canary check reads the tables once for what only a read shows (see rulesFlushed).
   */
  #auditDue = false;
  /** Bumped when a sync starts and when it ends: odd while one runs (see audit). */
  #syncEpoch = 0;
  /** Per-service nat chains present in the kernel after the last successful restore. */
  #ownedChains: ReadonlySet<string> = new Set<string>();
  /** Digests of the top-level chains the last successful restore left in place. */
  #applied: TopLevelDigests | undefined;
  /** The nfacct objects the rules count into, as the last full sync found them. */
  #nfacctCounters: ReadonlySet<string> = new Set<string>();
  /** How long the last render took (its own CPU time, not the writes); none before the first. */
  #lastRenderMs: number | undefined;
  /**
   * The reads prepareFirstSync started, for the first sync only: at start the lists take longer
   * than the reads, which then no longer compete with the first restore. Chains another program
   * adds or removes in between are handled as after any read: a KUBE chain that vanished fails
   * the restore, which is retried as a full sync with a fresh read.
   */
  #early: TableReads | undefined;

  constructor(options: IptablesProxierOptions) {
    this.#options = options;
    this.#family = options.family;
    this.#runner = options.runner ?? denoCommandRunner;
    this.#logger = options.logger ?? silentLogger;
    this.#metrics = options.metrics ?? NO_BACKEND_METRICS;
    this.#flavour = options.flavour ?? "nft";
    this.#bins = iptablesBinaries(options.family, this.#flavour);
    this.#chainNames = options.chainNames ?? new ChainNameCache();
    this.#reader = createTableReader(this.#runner, this.#flavour, this.#bins);
  }

  prepareFirstSync(): Promise<void> | undefined {
    if (this.#synced || this.#early !== undefined) return undefined;
    // With iptables-nft, nat read whole tells which of our chains a previous run left as this
    // one renders them (rewriting them costs far more than reading them; see keptFromBefore).
    const early = this.#early = this.#reader.read(this.#flavour === "nft");
    return early.natChains?.then(() => {}, () => {});
  }

  async sync(state: ProxyState): Promise<SyncReport> {
    if (state.family !== this.#family) {
      throw new RangeError(
        `Invalid state family "${state.family}": this proxier handles "${this.#family}"`,
      );
    }
    this.#syncEpoch++;
    try {
      return await this.#syncState(state);
    } finally {
      this.#syncEpoch++;
    }
  }

  /**
   * Upstream's canary monitor: only the small mangle table's canary is read each syncPeriod
   * (with legacy iptables, reading nat or filter costs O(rules)); a firewall reload flushes it
   * along with the others, and the full sync that follows rewrites every table. Once after
   * each full sync that did not read the tables, the check also reads them (see audit).
   */
  async rulesFlushed(): Promise<boolean> {
    if (!this.#synced) return false;
    const args = [...IPTABLES_WAIT_ARGS.slice(0, 2), "-t", CANARY_TABLE, "-S", KUBE_PROXY_CANARY];
    const out = await this.#runner({ cmd: this.#bins.iptables, args });
    if (out.code === 1) {
      this.#logger.info("iptables canary chain is gone, rules were flushed", {
        family: this.#family,
        table: CANARY_TABLE,
      });
      this.#needFullSync = true;
      return true;
    }
    if (out.code !== 0) throw new CommandError(this.#bins.iptables, args, out.code, out.stderr);
    return this.#auditDue ? await this.#audit() : false;
  }

  async #syncState(state: ProxyState): Promise<SyncReport> {
    const run = await this.#beginSync(state);
    let out;
    try {
      out = await this.#runner({
        cmd: this.#bins.restore,
        args: RESTORE_ARGS,
        stdinStream: restoreInput(run),
      });
    } catch (err) {
      this.#needFullSync = true;
      if (run.readFailed) {
        this.#logger.error("Failed to read the current iptables rules", {
          family: this.#family,
          err,
        });
      }
      throw err;
    } finally {
      if (run.renderMs !== undefined) this.#lastRenderMs = run.renderMs;
    }
    logRestored(run);
    if (out.code !== 0) {
      this.#metrics.applyFailed(run.full);
      this.#needFullSync = true;
      this.#logger.error("Failed to execute iptables-restore", {
        family: this.#family,
        full: run.full,
        code: out.code,
        stderr: out.stderr.trim(),
      });
      throw new CommandError(this.#bins.restore, RESTORE_ARGS, out.code, out.stderr);
    }
    const { rules, plan, digests, full, written } = run;
    if (rules === undefined || plan === undefined || digests === undefined) {
      this.#needFullSync = true;
      throw new Error(`${this.#bins.restore} exited 0 without reading all its input`);
    }
    this.#needFullSync = false;
    this.#synced = true;
    if (full) this.#auditDue = !run.readsTables;
    this.#ownedChains = rules.activeNatChains; // a fresh set per render, never changed after
    this.#applied = digests;
    return {
      full,
      counts: { nat: rules.ruleCounts.nat, filter: rules.ruleCounts.filter },
      written: { nat: written.nat, filter: written.filter },
    };
  }

  /** Decides what this sync writes and gathers what its render needs before the restore. */
  async #beginSync(state: ProxyState): Promise<SyncRun> {
    const full = this.#needFullSync || state.forceFullSync;
    // A forced full sync (hourly, or the node changed) after a successful restore rewrites every
    // chain from what that restore left, with no read beside it: with legacy iptables a read of
    // nat costs O(table) and takes a core from the restore. Jumps someone deleted and chains
    // someone added are what only a read shows; the next canary check reads for them.
    const readsTables = this.#needFullSync;
    // Every render names every chain: up to four per service port, one per endpoint.
    this.#chainNames.fit(4 * state.services.size + state.totalEndpoints);
    let kept: KeptChains | undefined;
    const natChains = this.#early?.natChains;
    if (readsTables && natChains !== undefined) {
      // A failed read fails the sync where its findings are needed (the tail).
      kept = keptFromBefore(await natChains.catch(() => undefined), this.#family);
    }
    if (full) await this.#ensureNfacct();
    return {
      state,
      family: this.#family,
      logger: this.#logger,
      full,
      readsTables,
      include: new Set<string>(),
      kept,
      renderOptions: await this.#renderOptions(state),
      layout: this.#layoutOf(state),
      sortDeclarations: this.#flavour === "nft",
      ownedChains: this.#ownedChains,
      applied: this.#applied,
      reader: this.#reader,
      startReads: () => {
        const reads = readsTables ? this.#early ?? this.#reader.read() : undefined;
        this.#early = undefined;
        return reads;
      },
      written: { nat: 0, filter: 0 },
      tables: undefined,
      rules: undefined,
      renderMs: undefined,
      readFailed: false,
      plan: undefined,
      digests: undefined,
    };
  }

  /** Makes the nfacct objects (a full sync does), and notes which the rules may count into. */
  async #ensureNfacct(): Promise<void> {
    const ensure = this.#options.ensureNfacct;
    if (ensure === undefined) return;
    try {
      this.#nfacctCounters = await ensure();
    } catch (err) {
      // Without the objects the matches would fail the restore: leave them out this time.
      this.#nfacctCounters = new Set();
      this.#logger.error("Failed to ensure the nfacct counters; rules go without them", { err });
    }
  }

  /** The render options, with this sync's interface addresses when CIDRs must be resolved. */
  async #renderOptions(state: ProxyState): Promise<IptablesRenderOptions> {
    const options = this.#options;
    const chainNames = this.#chainNames;
    const nfacctCounters = this.#nfacctCounters;
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
      this.#logger.error("Failed to list the node's addresses for nodePortAddresses", {
        family: state.family,
        err,
      });
      return { ...options, chainNames, nfacctCounters };
    }
  }

  /** How this sync's nat lines go to the restore (see NatLayoutKind). */
  #layoutOf(state: ProxyState): NatLayoutKind {
    const streamed = this.#lastRenderMs === undefined
      ? state.totalEndpoints <= MAX_STREAMED_FIRST_ENDPOINTS
      : this.#lastRenderMs < MAX_STREAMED_RENDER_MS;
    if (streamed) return "streamed";
    // iptables-nft lists a table whose chains were all declared in name order far more slowly.
    return this.#flavour === "legacy" ? "saved" : "held";
  }

  /**
   * After a full sync that did not read the tables: reads nat and filter once, as a full sync
   * with reads would, and asks for one when a jump is missing or a service chain we did not
   * write is there. A sync running during the read may have changed either: checked next time.
   */
  async #audit(): Promise<boolean> {
    const epoch = this.#syncEpoch;
    const found = await this.#reader.findings(this.#reader.read(), this.#ownedChains);
    if (epoch !== this.#syncEpoch || epoch % 2 === 1) return false;
    this.#auditDue = false;
    const { staleNatChains: stale, jumps } = found;
    if (stale.length === 0 && jumps.length === 0 && !found.declareKubeletFirewall) return false;
    this.#logger.info("iptables rules changed behind our back, forcing a full sync", {
      family: this.#family,
      missingJumps: jumps.map((j) => `${j.table} ${j.srcChain} -j ${j.dstChain}`),
      unknownChains: stale.length,
    });
    this.#needFullSync = true;
    return true;
  }
}
