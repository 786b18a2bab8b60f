/**
 * Gives memory back once the proxy goes quiet. V8 in Deno gets no idle-time tasks, so after a
 * sync the heap keeps the pages that decoding lists and rendering rules grew it to until some
 * later allocation triggers a full collection, which at idle never comes. One full collection
 * a little after the last sync of a burst (or after a relist that led to no sync) returns them;
 * it needs V8's `--expose-gc` (scripts/runtime_flags.ts), and without it this does nothing.
 * V8's own memory reducer is off (`--no-memory-reducer`): under
 * Deno its timer only fires when something else wakes the process, and then it runs
 * collections that free nothing (most of the idle CPU).
 *
 * Under steady churn (a change every second or so) the quiet period never comes, and V8 lets
 * each sync's garbage grow its heap by a few megabytes until its own full collection, which
 * raises the high-water mark. So a sync that leaves more than growthLimitBytes in use past what
 * the last collection left is followed at once by a regular (non-compacting, so short)
 * collection.
 */
import type { Clock, TimerHandle } from "../sync/mod.ts";

/** Options of createMemoryReclaimer. */
export interface MemoryReclaimerOptions {
  readonly clock: Clock;
  /** How long after the last sync to wait before collecting; default 2 s. */
  readonly quietMs?: number;
  /** Runs a full collection; default V8's `gc()` when exposed, else nothing. */
  readonly collect?: () => void;
  /**
   * Runs the collection before the first sync and after a sync that grew the heap too far;
   * default V8's regular full `gc()` (no compaction, so shorter than a last-resort one) when
   * exposed, else nothing.
   */
  readonly collectRegular?: () => void;
  /** Bytes of V8's heap in use; default `Deno.memoryUsage().heapUsed`. */
  readonly heapUsed?: () => number;
  /**
   * How many bytes in use a sync may add to what the last collection (ours or V8's) left before
   * its end collects at once; default 3 MiB: low enough that ours comes before V8's own full
   * collection under churn, high enough that most syncs collect nothing.
   */
  readonly growthLimitBytes?: number;
}

/** Schedules one full collection after each burst of syncs or relists. */
export interface MemoryReclaimer {
  /**
   * A sync finished: collect now if it left the heap more than growthLimitBytes fuller than the
   * last collection did, and (re)start the quiet period.
   */
  synced(): void;
  /**
   * A whole list was applied (a relist, which may change nothing and so sync nothing): (re)start
   * the quiet period, unless a sync is running (its end restarts it) or none has started yet
   * (the collection before the first sync takes the initial lists' garbage).
   */
  listed(): void;
  /** Cancels a pending collection. */
  stop(): void;
  /**
   * A sync is about to start: a pending quiet-time collection waits for its end. Before the
   * first one, collect the initial lists' garbage (the decoded list bodies), so the first render
   * reuses that space instead of growing the heap on top of it, which lowers the start-up peak.
   */
  beforeSync(): void;
  /**
   * The initial lists are in but the first sync still waits for the backends' start-up reads
   * (iptables-nft reads its whole nat table then): collect the lists' garbage now, so that the
   * reads do not pile theirs on top of it and set off V8's own full collection at the height of
   * both. beforeSync() collects again once the reads are done.
   */
  beforeFirstReads(): void;
}

/**
 * V8's full collection (`gc()` of `--expose-gc`), else undefined. The "last-resort" flavor
 * (the default) repeats collections that also compact and shrink the heap, as V8 does before
 * giving up on memory; a "regular" one frees the objects but keeps most pages, so the heap
 * can stay near twice its live objects. A last-resort collection called while a marking cycle
 * is under way (its concurrent markers starved of CPU) would finish that cycle with the
 * compaction candidates it started with and give back almost no pages, so a regular one
 * finishes the cycle first.
 */
export function exposedGc(
  flavor: "last-resort" | "regular" = "last-resort",
): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  if (typeof gc !== "function") return undefined;
  const major = (f: typeof flavor) => gc({ type: "major", execution: "sync", flavor: f });
  if (flavor === "regular") return () => major("regular");
  return () => {
    major("regular");
    major("last-resort");
  };
}

/** Creates a reclaimer; with no collector available it never schedules anything. */
export function createMemoryReclaimer(options: MemoryReclaimerOptions): MemoryReclaimer {
  const { clock } = options;
  const quietMs = options.quietMs ?? 2_000;
  const collect = options.collect ?? exposedGc();
  const regular = options.collectRegular ?? exposedGc("regular");
  const heapUsed = options.heapUsed ?? (() => Deno.memoryUsage().heapUsed);
  const growthLimit = options.growthLimitBytes ?? 3 * 1024 * 1024;
  /** Bytes in use after the last collection; lowered when V8's own collections free more. */
  let floor: number | undefined;
  let timer: TimerHandle | undefined;
  // "first": no sync has started yet (the collection before it takes the initial lists).
  let phase: "first" | "syncing" | "quiet" = "first";
  const stop = () => {
    if (timer !== undefined) clock.clearTimeout(timer);
    timer = undefined;
  };
  const schedule = () => {
    if (collect === undefined) return;
    stop();
    timer = clock.setTimeout(() => {
      timer = undefined;
      collectWith(collect);
    }, quietMs);
  };
  const collectWith = (gc: () => void) => {
    gc();
    floor = heapUsed();
  };
  /** Collects if the heap in use grew past the limit since the last collection. */
  const boundGrowth = () => {
    if (regular === undefined || floor === undefined) return;
    const used = heapUsed();
    if (used - floor > growthLimit) collectWith(regular);
    else if (used < floor) floor = used;
  };
  return {
    synced() {
      if (phase === "syncing") {
        phase = "quiet";
        boundGrowth();
      }
      schedule();
    },
    listed() {
      if (phase === "quiet") schedule();
    },
    stop,
    beforeFirstReads() {
      if (phase === "first" && regular !== undefined) collectWith(regular);
    },
    beforeSync() {
      stop();
      if (phase === "first" && regular !== undefined) collectWith(regular);
      phase = "syncing";
    },
  };
}
