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
import { NFT_TABLE, SERVICES_CHAIN, SYNC_STAMP } from "./names.ts";
import { newNftTableStore, type NftRenderReport, updateNftTableStore } from "./render.ts";
import {
  type NftablesRenderOptions,
  type NftRenderConfig,
  resolveNftRenderConfig,
} from "./render_options.ts";
import { parseStamp, stampElements } from "./table_stamp.ts";
import type { NftTableStore } from "./table_store.ts";
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
  const runner = options.runner ?? denoCommandRunner;
  const logger = options.logger ?? silentLogger;
  const metrics = options.metrics ?? noMetrics;
  const now = options.now ?? Date.now;
  const checkPeriodMs = options.checkPeriodMs ?? 30_000;
  const nftFamily = options.family === "IPv6" ? "ip6" : "ip";

  let store: NftTableStore | null = null;
  let lastConfig = "";
  let lastCheck = Number.NEGATIVE_INFINITY;
  let warnedLoopback = false;
  let firstSync = true;
  const tableRefText = `${nftFamily} ${NFT_TABLE}`;

  /** The stamp the kernel's table carries, or null (no table, no stamp). */
  const kernelStamp = async (): Promise<readonly [number, number] | null> => {
    const out = await runner({
      cmd: "nft",
      args: ["list", "map", nftFamily, NFT_TABLE, SYNC_STAMP],
    });
    return out.code === 0 ? parseStamp(out.stdout) : null;
  };

  /** Appends the stamp of `s` to a non-empty script (flushing the old one unless `full`). */
  const stamped = (tx: NftTransaction, s: NftTableStore, full: boolean): NftTransaction => {
    if (tx.script === "") return tx;
    const flush = full ? "" : `flush map ${tableRefText} ${SYNC_STAMP}\n`;
    const add = `add element ${tableRefText} ${SYNC_STAMP} { ${stampElements(s.stamp())} }\n`;
    return { ...tx, script: tx.script + flush + add };
  };

  const apply = async (tx: NftTransaction): Promise<void> => {
    if (tx.script === "") return;
    const args = ["-f", "-"];
    const out = await runner({ cmd: "nft", args, stdin: tx.script });
    if (out.code !== 0) throw new CommandError("nft", args, out.code, out.stderr);
  };

  // `nft list chains <family>` reads chain names only, which stays cheap at any size; nft
  // 1.0.6 loads every set element for `list tables` or `list chain`.
  const rulesFlushed = async (): Promise<boolean> => {
    const out = await runner({ cmd: "nft", args: ["list", "chains", nftFamily] });
    if (out.code !== 0) return true;
    return !hasChain(out.stdout, nftFamily, NFT_TABLE, SERVICES_CHAIN);
  };

  const counts = (s: NftTableStore): Record<string, number> => {
    const view = s.view();
    let rules = 0;
    for (const c of view.chains.values()) rules += c.rules.length;
    let elements = 0;
    for (const set of view.sets.values()) elements += set.elements.size;
    return { chains: view.chains.size, rules, sets: view.sets.size, elements };
  };

  const sync = async (state: ProxyState): Promise<NftablesSyncReport> => {
    if (state.family !== options.family) {
      throw new RangeError(`Invalid state family "${state.family}": expected "${options.family}"`);
    }
    const config: NftRenderConfig = resolveNftRenderConfig(state, options);
    if (config.loopbackRequested && !warnedLoopback) {
      warnedLoopback = true;
      logger.info(
        "--nodeport-addresses includes localhost but localhost NodePorts are not supported",
        {
          family: options.family,
        },
      );
    }
    const configText = JSON.stringify(config);
    let full = store === null || state.forceFullSync || configText !== lastConfig;
    if (!full && now() - lastCheck >= checkPeriodMs) {
      lastCheck = now();
      if (await rulesFlushed()) {
        logger.info("nftables table missing, recreating it", { family: options.family });
        full = true;
      }
    }
    let report: NftRenderReport;
    let tx: NftTransaction | null = null;
    let target = store;
    let adopted = false;
    if (!full && target !== null) {
      report = updateNftTableStore(target, state, config, false);
      tx = target.takeTransaction();
      if (tx !== null) tx = stamped(tx, target, false);
    }
    if (tx === null) {
      full = true;
      target = newNftTableStore(config);
      target.suspendTracking();
      report = updateNftTableStore(target, state, config, true);
      const found = firstSync ? await kernelStamp() : null;
      const mine = target.stamp();
      adopted = found !== null && found[0] === mine[0] && found[1] === mine[1];
      tx = adopted ? EMPTY_TRANSACTION : stamped(fullTransaction(target.view()), target, true);
    }
    firstSync = false;
    try {
      await apply(tx);
    } catch (err) {
      store = null;
      metrics.syncFailure();
      logger.error("nftables sync failed", {
        family: options.family,
        full,
        error: err instanceof Error ? err.message.slice(0, 2000) : String(err),
      });
      throw err;
    }
    target!.markWritten();
    store = target;
    lastConfig = configText;
    if (full) lastCheck = now();
    const r = report!;
    for (const s of [...r.skipped, ...r.conflicts].slice(0, 20)) {
      logger.warn("Service port left out of the nftables rules", { key: s.key, reason: s.reason });
    }
    if (adopted) {
      logger.info("nftables table already up to date, adopted", { family: options.family });
    }
    return { ...r, full, adopted, ruleCounts: counts(target!), transaction: tx };
  };

  const cleanup = async (): Promise<void> => {
    try {
      await cleanupNftables(runner, logger);
    } catch (err) {
      metrics.cleanupFailure();
      throw err;
    }
  };

  return { name: "nftables", sync, rulesFlushed, cleanup };
}
