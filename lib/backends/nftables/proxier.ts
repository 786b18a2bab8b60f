/**
 * The nftables backend for one IP family: renders each ProxyState into a table store and
 * applies it with one `nft -f -` transaction. The first sync, the sync after a failure, a
 * snapshot with forceFullSync, a changed render configuration and a table found missing
 * recreate the whole table (atomically); every other sync writes only the objects of the
 * service ports the snapshot marks changed. Every transaction ends with the table's
 * fingerprint (table_stamp.ts); on its first sync a restarted proxy reads that one map and,
 * when its own render has the same fingerprint, adopts the table without writing. Per sync nothing is read back except, at most
 * once per `checkPeriodMs`, the chain names of the family, to notice a table deleted behind
 * our back.
 *
 * The layout (render.ts: shared chains and maps that do not grow with the number of services)
 * keeps a large cold sync to a few seconds and one endpoint change to a small transaction,
 * where upstream's per-service chains are far slower at large scale; bench/nftables_layout.ts
 * measures both (docs/performance.md).
 */
import { CommandError, type CommandRunner, denoCommandRunner } from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import { cleanupNftables } from "./cleanup.ts";
import { NFT_TABLE, SERVICES_CHAIN, SYNC_STAMP } from "./_names.ts";
import { newNftTableStore, type NftRenderReport, updateNftTableStore } from "./render.ts";
import {
  type NftablesRenderOptions,
  type NftRenderConfig,
  resolveNftRenderConfig,
} from "./render_options.ts";
import { parseStamp, stampElements } from "./_table_stamp.ts";
import type { NftTableStore } from "./_table_store.ts";
import { EMPTY_TRANSACTION, fullTransaction, type NftTransaction } from "./transaction.ts";

/** Counters the nftables backend bumps (kubeproxy_sync_proxy_rules_nftables_*_failures_total). */
export interface NftablesMetrics {
  syncFailure(): void;
  cleanupFailure(): void;
}

/** How to build an nftables proxier; everything but `family` has a default. */
export interface NftablesProxierOptions extends NftablesRenderOptions {
  readonly family: IPFamily;
  readonly runner?: CommandRunner;
  readonly logger?: Logger;
  readonly metrics?: NftablesMetrics;
  /** Milliseconds clock for the table check cadence; default Date.now. */
  readonly now?: () => number;
  /** At most one table check per this many ms (default 30 s, upstream's syncPeriod). */
  readonly checkPeriodMs?: number;
}

/** What one applied sync did. */
export interface NftablesSyncReport extends NftRenderReport {
  readonly full: boolean;
  /** First sync found the kernel already holding exactly this table and wrote nothing. */
  readonly adopted: boolean;
  /** Rules and elements in the table after the sync, by kind (for logs and metrics). */
  readonly ruleCounts: Readonly<Record<string, number>>;
  /** The transaction written (an empty script when nothing changed). */
  readonly transaction: NftTransaction;
}

/** The nftables backend of one family. */
export interface NftablesProxier {
  readonly name: "nftables";
  /** Applies the snapshot; on failure counts, makes the next sync full, and throws. */
  sync(state: ProxyState): Promise<NftablesSyncReport>;
  /** True when our table (or its `services` chain) is gone, so a full sync is needed. */
  rulesFlushed(): Promise<boolean>;
  /** Deletes the `kube-proxy` tables of both families; idempotent. */
  cleanup(): Promise<void>;
}

/** Whether `nft list chains` output shows `chain` in table `family name`. */
export function hasChain(listing: string, family: string, table: string, chain: string): boolean {
  let inTable = false;
  for (const raw of listing.split("\n")) {
    const line = raw.trim();
    const t = /^table (\S+) (\S+) \{$/.exec(line);
    if (t) inTable = t[1] === family && t[2] === table;
    else if (inTable && line === `chain ${chain} {`) return true;
  }
  return false;
}

const noMetrics: NftablesMetrics = { syncFailure: () => {}, cleanupFailure: () => {} };

/** Creates the nftables backend of one family; does no I/O until sync() is called. */
export function createNftablesProxier(options: NftablesProxierOptions): NftablesProxier {
  return new NftTableProxier(options);
}

/** What one sync will write: the table store it leaves, and the transaction that gets there. */
interface NftSyncPlan {
  readonly full: boolean;
  readonly target: NftTableStore;
  readonly report: NftRenderReport;
  readonly tx: NftTransaction;
  /** The kernel already held this table as rendered: nothing is written. */
  readonly adopted: boolean;
}

/** The nftables proxier of one family: the table it last wrote, and when it last checked it. */
class NftTableProxier implements NftablesProxier {
  readonly name = "nftables";
  readonly #options: NftablesProxierOptions;
  readonly #runner: CommandRunner;
  readonly #logger: Logger;
  readonly #metrics: NftablesMetrics;
  readonly #now: () => number;
  readonly #checkPeriodMs: number;
  /** "ip" or "ip6". */
  readonly #nftFamily: string;
  /** `<family> kube-proxy`, as the scripts name the table. */
  readonly #tableRef: string;
  /** The table as the kernel holds it after the last successful sync; null forces a full one. */
  #store: NftTableStore | null = null;
  /** The render configuration of that sync, as JSON: a change rewrites the whole table. */
  #lastConfig = "";
  /** When the table was last known present (see rulesFlushed). */
  #lastCheck = Number.NEGATIVE_INFINITY;
  #warnedLoopback = false;
  /** No sync was made yet: the first may adopt the table a previous run left. */
  #firstSync = true;

  constructor(options: NftablesProxierOptions) {
    this.#options = options;
    this.#runner = options.runner ?? denoCommandRunner;
    this.#logger = options.logger ?? silentLogger;
    this.#metrics = options.metrics ?? noMetrics;
    this.#now = options.now ?? Date.now;
    this.#checkPeriodMs = options.checkPeriodMs ?? 30_000;
    this.#nftFamily = options.family === "IPv6" ? "ip6" : "ip";
    this.#tableRef = `${this.#nftFamily} ${NFT_TABLE}`;
  }

  async sync(state: ProxyState): Promise<NftablesSyncReport> {
    const family = this.#options.family;
    if (state.family !== family) {
      throw new RangeError(`Invalid state family "${state.family}": expected "${family}"`);
    }
    const config: NftRenderConfig = resolveNftRenderConfig(state, this.#options);
    if (config.loopbackRequested && !this.#warnedLoopback) {
      this.#warnedLoopback = true;
      this.#logger.info(
        "--nodeport-addresses includes localhost but localhost NodePorts are not supported",
        { family },
      );
    }
    const configText = JSON.stringify(config);
    const plan = await this.#plan(state, config, configText);
    const { full, target, report, tx, adopted } = plan;
    this.#firstSync = false;
    try {
      await this.#apply(tx);
    } catch (err) {
      this.#store = null;
      this.#metrics.syncFailure();
      this.#logger.error("nftables sync failed", {
        family,
        full,
        error: err instanceof Error ? err.message.slice(0, 2000) : String(err),
      });
      throw err;
    }
    target.markWritten();
    this.#store = target;
    this.#lastConfig = configText;
    if (full) this.#lastCheck = this.#now();
    for (const s of [...report.skipped, ...report.conflicts].slice(0, 20)) {
      this.#logger.warn("Service port left out of the nftables rules", {
        key: s.key,
        reason: s.reason,
      });
    }
    if (adopted) this.#logger.info("nftables table already up to date, adopted", { family });
    return { ...report, full, adopted, ruleCounts: counts(target), transaction: tx };
  }

  // `nft list chains <family>` reads chain names only, which stays cheap at any size; nft
  // 1.0.6 loads every set element for `list tables` or `list chain`.
  async rulesFlushed(): Promise<boolean> {
    const nftFamily = this.#nftFamily;
    const out = await this.#runner({ cmd: "nft", args: ["list", "chains", nftFamily] });
    if (out.code !== 0) return true;
    return !hasChain(out.stdout, nftFamily, NFT_TABLE, SERVICES_CHAIN);
  }

  async cleanup(): Promise<void> {
    try {
      await cleanupNftables(this.#runner, this.#logger);
    } catch (err) {
      this.#metrics.cleanupFailure();
      throw err;
    }
  }

  /**
   * Decides between a partial sync (the changed service ports' objects on the last store) and
   * a full one (a new store, the whole table), and renders it. A partial sync that finds
   * nothing to write, or a table gone since the last check, becomes a full one.
   */
  async #plan(
    state: ProxyState,
    config: NftRenderConfig,
    configText: string,
  ): Promise<NftSyncPlan> {
    const store = this.#store;
    let full = store === null || state.forceFullSync || configText !== this.#lastConfig;
    if (!full && this.#now() - this.#lastCheck >= this.#checkPeriodMs) {
      this.#lastCheck = this.#now();
      if (await this.rulesFlushed()) {
        this.#logger.info("nftables table missing, recreating it", {
          family: this.#options.family,
        });
        full = true;
      }
    }
    if (!full && store !== null) {
      const report = updateNftTableStore(store, state, config, false);
      const tx = store.takeTransaction();
      if (tx !== null) {
        return { full, target: store, report, tx: this.#stamped(tx, store, false), adopted: false };
      }
    }
    const target = newNftTableStore(config);
    target.suspendTracking();
    const report = updateNftTableStore(target, state, config, true);
    const found = this.#firstSync ? await this.#kernelStamp() : null;
    const mine = target.stamp();
    const adopted = found !== null && found[0] === mine[0] && found[1] === mine[1];
    const tx = adopted
      ? EMPTY_TRANSACTION
      : this.#stamped(fullTransaction(target.view()), target, true);
    return { full: true, target, report, tx, adopted };
  }

  /** The stamp the kernel's table carries, or null (no table, no stamp). */
  async #kernelStamp(): Promise<readonly [number, number] | null> {
    const out = await this.#runner({
      cmd: "nft",
      args: ["list", "map", this.#nftFamily, NFT_TABLE, SYNC_STAMP],
    });
    return out.code === 0 ? parseStamp(out.stdout) : null;
  }

  /** Appends the stamp of `s` to a non-empty script (flushing the old one unless `full`). */
  #stamped(tx: NftTransaction, s: NftTableStore, full: boolean): NftTransaction {
    if (tx.script === "") return tx;
    const tableRef = this.#tableRef;
    const flush = full ? "" : `flush map ${tableRef} ${SYNC_STAMP}\n`;
    const add = `add element ${tableRef} ${SYNC_STAMP} { ${stampElements(s.stamp())} }\n`;
    return { ...tx, script: tx.script + flush + add };
  }

  async #apply(tx: NftTransaction): Promise<void> {
    if (tx.script === "") return;
    const args = ["-f", "-"];
    const out = await this.#runner({ cmd: "nft", args, stdin: tx.script });
    if (out.code !== 0) throw new CommandError("nft", args, out.code, out.stderr);
  }
}

/** Chains, rules, sets and elements in the table `s` holds (for logs and metrics). */
function counts(s: NftTableStore): Record<string, number> {
  const view = s.view();
  let rules = 0;
  for (const c of view.chains.values()) rules += c.rules.length;
  let elements = 0;
  for (const set of view.sets.values()) elements += set.elements.size;
  return { chains: view.chains.size, rules, sets: view.sets.size, elements };
}
