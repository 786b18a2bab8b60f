/**
 * The conntrack reconciler: after every sync (and so at start), lists the family's UDP and SCTP
 * flows with `conntrack -L`, filtered in the kernel by family and protocol, and deletes the
 * stale ones in one `conntrack -R -` batch. Flows to serving endpoints are never touched, so a
 * restart with unchanged state deletes nothing. Every failure is logged and counted, never
 * thrown: a listing that cannot be read deletes nothing.
 */
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { IPFamily, Protocol, ProxyState } from "../proxy/mod.ts";
import { type ConntrackEntry, parseConntrackList } from "./conntrack_entry.ts";
import {
  deleteFilterLines,
  reconciledProtocols,
  reconcileNeeded,
  staleConntrackEntries,
} from "./_stale_entries.ts";

/** The reconciler's metric hooks (upstream's histogram and deleted-entries counter). */
export interface ConntrackReconcilerMetrics {
  observeDuration(family: IPFamily, seconds: number): void;
  deleted(family: IPFamily, n: number): void;
  /** A listing or deletion failed, or printed lines that could not be read. */
  failed(family: IPFamily): void;
}

/** What the reconciler needs. */
export interface ConntrackReconcilerOptions {
  readonly runner: CommandRunner;
  readonly logger: Logger;
  readonly metrics?: ConntrackReconcilerMetrics;
  /** Milliseconds, for the duration histogram. */
  readonly now?: () => number;
}

/** What one reconcile did. */
export interface ReconcileResult {
  /** Nothing could have gone stale since the last successful reconcile: nothing was listed. */
  readonly skipped: boolean;
  readonly listed: number;
  readonly stale: number;
  readonly deleted: number;
  readonly failed: boolean;
}

/**
 * Deletes stale UDP/SCTP flows of one family against the snapshot just applied. `previous` is
 * the one applied before (it names deleted services); `full` says the sync rewrote everything.
 * The table is read at start, after a full sync, after a failed reconcile, and whenever a UDP or
 * SCTP service port changed; a partial sync that touched none of them cannot have made a flow
 * stale and skips the listing, which costs a walk of the whole table.
 */
export type ConntrackReconciler = (
  state: ProxyState,
  previous?: ProxyState,
  full?: boolean,
) => Promise<ReconcileResult>;

const familyArg = (f: IPFamily) => (f === "IPv4" ? "ipv4" : "ipv6");

/** Builds a reconciler; it starts nothing until called. */
export function createConntrackReconciler(opts: ConntrackReconcilerOptions): ConntrackReconciler {
  const { runner, logger, metrics } = opts;
  const now = opts.now ?? (() => performance.now());

  const list = async (family: IPFamily, protocol: Protocol) => {
    const args = ["-L", "-f", familyArg(family), "-p", protocol.toLowerCase()];
    const out = await runner({ cmd: "conntrack", args });
    if (out.code !== 0) {
      logger.error("Failed to list conntrack entries", {
        command: `conntrack ${args.join(" ")}`,
        code: out.code,
        stderr: out.stderr.trim(),
      });
      return undefined;
    }
    const { entries, unparsed } = parseConntrackList(out.stdout);
    // A flow of another protocol in a protocol-filtered listing means the output is not what
    // it claims to be: nothing from it is trusted.
    if (entries.some((e) => e.protocol !== protocol)) {
      logger.error("Unexpected conntrack listing, deleting nothing", {
        command: `conntrack ${args.join(" ")}`,
      });
      return undefined;
    }
    if (unparsed.length > 0) {
      logger.warn("Skipped conntrack lines that could not be read", {
        family,
        lines: unparsed.length,
        first: unparsed[0]?.slice(0, 200),
      });
      metrics?.failed(family);
    }
    return entries;
  };

  const remove = async (family: IPFamily, stale: readonly ConntrackEntry[]) => {
    const lines = deleteFilterLines(family, stale);
    const out = await runner({
      cmd: "conntrack",
      args: ["-R", "-"],
      stdin: lines.join("\n") + "\n",
    });
    // Each deleted flow is printed on its own line.
    const deleted = out.stdout.split("\n").filter((l) => l.trim() !== "").length;
    if (out.code !== 0) {
      logger.error("Failed to delete stale conntrack entries", {
        command: "conntrack -R -",
        code: out.code,
        stderr: out.stderr.trim(),
        filters: lines.length,
      });
    }
    return { deleted, ok: out.code === 0 };
  };

  /** Families whose last reconcile failed: the next sync reconciles whatever it changed. */
  const retry = new Set<IPFamily>();

  return async (state, previous, full = false) => {
    const family = state.family;
    if (previous && !full && !retry.has(family) && !reconcileNeeded(state, previous)) {
      return { skipped: true, listed: 0, stale: 0, deleted: 0, failed: false };
    }
    const started = now();
    let listed = 0, stale = 0, deleted = 0, failed = false;
    try {
      for (const protocol of reconciledProtocols(state, previous)) {
        const entries = await list(family, protocol);
        if (!entries) {
          failed = true;
          continue;
        }
        listed += entries.length;
        const gone = staleConntrackEntries(entries, state, previous);
        stale += gone.length;
        if (gone.length === 0) continue;
        const r = await remove(family, gone);
        deleted += r.deleted;
        if (!r.ok) failed = true;
      }
    } catch (err) {
      failed = true;
      logger.error("Failed to reconcile conntrack entries", { family, err });
    }
    if (failed) {
      metrics?.failed(family);
      retry.add(family);
    } else retry.delete(family);
    if (deleted > 0) metrics?.deleted(family, deleted);
    const seconds = (now() - started) / 1000;
    metrics?.observeDuration(family, seconds);
    const msg = deleted > 0 ? "Deleted stale conntrack entries" : "Reconciled conntrack entries";
    logger.debug(deleted > 0 ? 2 : 4, msg, {
      family,
      listed,
      stale,
      deleted,
      elapsed: `${seconds.toFixed(3)}s`,
    });
    return { skipped: false, listed, stale, deleted, failed };
  };
}
