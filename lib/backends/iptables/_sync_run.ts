/**
 * One iptables sync as an explicit record, and the restore input made from it while
 * iptables-restore runs: the nat table slice by slice as it renders, then the tail once the
 * table reads are in. The proxier decides the record's inputs; the input fills in its findings.
 */
import type { Logger } from "../../log/mod.ts";
import type { IPFamily, ProxyState } from "../../proxy/mod.ts";
import type { KeptChains } from "./_kept_chains.ts";
import { type IptablesRenderSummary, renderIptables, renderIptablesSlices } from "./render.ts";
import type { IptablesRenderOptions } from "./render_options.ts";
import {
  buildRestorePayload,
  type RestoreBody,
  type RestorePlan,
  restoreTailChunks,
  type WrittenRules,
} from "./restore_payload.ts";
import { natLayout, type NatLayoutKind } from "./restore_layout.ts";
import type { TableFindings, TableReader, TableReads } from "./table_reads.ts";
import { type TopLevelDigests, topLevelWrite } from "./top_level_chains.ts";

/**
 * One sync's working record: what the proxier decided before the restore started, and what
 * the restore input found and rendered as it was made (read once the restore has exited).
 */
export interface SyncRun {
  readonly state: ProxyState;
  readonly family: IPFamily;
  readonly logger: Logger;
  /** A full sync: every chain written, the canary and the top-level chains included. */
  readonly full: boolean;
  /** The tables are read beside the restore. */
  readonly readsTables: boolean;
  /**
   * The service ports whose chains this sync writes: changed ones, and those owning a chain we
   * have not programmed (yet); the rest are only named and counted.
   */
  readonly include: Set<string>;
  /** The first sync of a process leaves alone the chains a previous run left as they render. */
  readonly kept: KeptChains | undefined;
  readonly renderOptions: IptablesRenderOptions;
  /** How the nat lines go to the restore. */
  readonly layout: NatLayoutKind;
  /** iptables-nft wants the chain declarations sorted. */
  readonly sortDeclarations: boolean;
  /** Per-service nat chains the last successful restore left in the kernel. */
  readonly ownedChains: ReadonlySet<string>;
  /** Digests of the top-level chains the last successful restore left in place. */
  readonly applied: TopLevelDigests | undefined;
  readonly reader: TableReader;
  /**
   * Hands over the reads of nat and filter once the restore has started (those started early
   * for the first sync, or new ones); undefined when `readsTables` is false.
   */
  readonly startReads: () => TableReads | undefined;
  /** Counted as the input is made: what reaches the restore, partial or left in place alike. */
  readonly written: WrittenRules;
  /** The reads of nat and filter this sync made, if any. */
  tables: TableReads | undefined;
  /** The render, once its last slice was made. */
  rules: IptablesRenderSummary | undefined;
  /** How long the render took (its own CPU time, not the writes), once it was made. */
  renderMs: number | undefined;
  /** Reading the tables failed: the restore was fed a failing input. */
  readFailed: boolean;
  /** The whole restore plan, once the tail was made. */
  plan: RestorePlan | undefined;
  /** The top-level chains' digests this restore leaves in place. */
  digests: TopLevelDigests | undefined;
}

/**
 * The restore input, made while iptables-restore runs: a full sync's reads of the tables
 * start once the restore has started (both spawns block this thread), the restore takes the
 * lock and reads the nat table while the first slices render, and (streamed) parses each
 * slice as it comes; only the tail waits for the reads.
 */
export async function* restoreInput(run: SyncRun): AsyncGenerator<string> {
  const { state, full, kept, include } = run;
  const body: RestoreBody = {
    includeService: (k: string) => include.has(k),
    canary: full,
    writeTopLevel: full && kept === undefined,
  };
  const topLevelNat: string[] = [];
  const nat = natLayout(run.layout, body, {
    sortDeclarations: run.sortDeclarations,
    written: run.written,
  });
  const head = nat.head();
  if (head !== undefined) yield head;
  run.tables = run.startReads();
  const slices = renderIptablesSlices(state, run.renderOptions, {
    writeServiceChains: serviceChainsFilter(run),
  });
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
  const rules = run.rules = next.value;
  run.renderMs = renderMs;
  logRendered(run, rules);
  if (head !== undefined) {
    yield* nat.held();
    yield* restoreTail(run, body, topLevelNat, rules);
    return;
  }
  // Held: nothing is written until the whole input can follow without a wait, the tail's reads
  // included; the restore takes the lock at its first line, and `-w 5` fails a read of stdin
  // that is still waiting 5 s later.
  const tail: string[] = [];
  for await (const piece of restoreTail(run, body, topLevelNat, rules)) tail.push(piece);
  yield* nat.held();
  yield* tail;
}

/** The restore input of `run`, rendered again and joined only if a verbosity-9 line is written. */
export function logRestored(run: SyncRun): void {
  const plan = run.plan;
  if (plan === undefined) return;
  const include = run.include;
  const again = () =>
    renderIptables(run.state, run.renderOptions, { writeServiceChains: (k) => include.has(k) });
  run.logger.debug(9, "Restored iptables", {
    rules: { toJSON: () => buildRestorePayload(again(), plan) },
  });
}

/**
 * The render's question for each service port: are its chains written? A partial sync writes
 * those of changed service ports and of any owning a chain we have not programmed (yet).
 */
function serviceChainsFilter(run: SyncRun): (key: string, chains: readonly string[]) => boolean {
  const { full, include, kept, ownedChains } = run;
  const changed = run.state.changed;
  return (key, chains) => {
    if (!full && !changed.has(key) && chains.every((c) => ownedChains.has(c))) return false;
    // With `kept`, each slice decides once its lines are rendered.
    if (kept === undefined) include.add(key);
    return true;
  };
}

/**
 * The tables' tail: the top-level chains (a partial sync writes them, and the filter table,
 * only if they changed), stale chains to delete and missing jumps, once the reads are in.
 */
async function* restoreTail(
  run: SyncRun,
  body: RestoreBody,
  topLevelNat: readonly string[],
  rules: IptablesRenderSummary,
): AsyncGenerator<string> {
  const filter = [...rules.filterChains, ...rules.filterRules];
  const top = topLevelWrite(topLevelNat, filter, run.applied, run.full);
  run.digests = top.digests;
  const found = await findings(run, rules.activeNatChains);
  const changedTopLevelNat = run.kept?.topLevel(topLevelNat) ?? top.changedTopLevelNat;
  if (run.kept !== undefined) {
    run.logger.debug(2, "Left in place the nat chains a previous run wrote as rendered", {
      family: run.family,
      servicePorts: run.state.services.size - run.include.size,
      topLevelLines: topLevelNat.length - changedTopLevelNat.length,
    });
  }
  const plan = run.plan = { ...body, ...found, changedTopLevelNat, writeFilter: top.writeFilter };
  yield* restoreTailChunks(rules, plan, run.written);
}

/** What the tables hold that the tail must fix; without reads, what our last restore left. */
async function findings(run: SyncRun, active: ReadonlySet<string>): Promise<TableFindings> {
  if (run.tables === undefined) {
    return {
      staleNatChains: [...run.ownedChains].filter((c) => !active.has(c)).sort(),
      jumps: [],
      declareKubeletFirewall: false,
    };
  }
  try {
    return await run.reader.findings(run.tables, active);
  } catch (err) {
    run.readFailed = true;
    throw err;
  }
}

/** Logs the service ports skipped for untrusted values, and the render's size. */
function logRendered(run: SyncRun, rules: IptablesRenderSummary): void {
  for (const s of rules.skipped) {
    run.logger.warn("Skipping service port with an untrusted value", {
      service: s.key,
      reason: s.reason,
    });
  }
  run.logger.debug(2, "Reloading service iptables data", {
    family: run.family,
    full: run.full,
    numServices: run.state.services.size,
    numEndpoints: run.state.totalEndpoints,
    numNATRules: rules.ruleCounts.nat,
    numFilterRules: rules.ruleCounts.filter,
  });
}
