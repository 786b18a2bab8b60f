/**
 * Packs a rendered rule set into iptables-restore input (for `--noflush`): full syncs carry
 * everything plus jump rules and canaries; partial syncs carry the top-level chains whole and
 * only the chains of changed service ports; stale chains are flushed and deleted in the same
 * input.
 */
import { linesText } from "../common/mod.ts";
import type { ProxyState } from "../../proxy/mod.ts";
import { KUBE_FIREWALL, KUBE_PROXY_CANARY } from "./chain_names.ts";
import { chainLine, jumpInsertLine, type JumpRule } from "../../netfilter/mod.ts";
import { missingJumps } from "./jump_chains.ts";
import { renderIptables } from "./render.ts";
import type { IptablesRenderOptions } from "./render_options.ts";
import type { IptablesRenderSummary, IptablesRuleSet } from "./render.ts";
import type { OwnedLine } from "./rule_buffer.ts";

/** What a restore writes besides the rendered rules that is known before any table is read. */
export interface RestoreBody {
  /** Whether the chains of this service port key are (re)written. */
  readonly includeService: (key: string) => boolean;
  /** Also (re)create KUBE-PROXY-CANARY in mangle, nat and filter. */
  readonly canary: boolean;
  /**
   * Write the top-level nat chains with the service chains (a full sync); a partial sync
   * writes only those that changed, as `changedTopLevelNat` in the tail.
   */
  readonly writeTopLevel: boolean;
}

/** What a restore writes after the nat rules, from what the tables hold (a full sync reads it). */
export interface RestoreTail {
  /** Per-service nat chains to flush and delete (`-X`). */
  readonly staleNatChains: readonly string[];
  /** Jump rules to insert into built-in chains. */
  readonly jumps: readonly JumpRule[];
  /** KUBE-FIREWALL does not exist yet and the rule set does not declare it. */
  readonly declareKubeletFirewall: boolean;
  /** Lines of the top-level nat chains that changed, when the body leaves them out. */
  readonly changedTopLevelNat: readonly string[];
  /** Write the filter table (a partial sync leaves it out when it did not change). */
  readonly writeFilter: boolean;
}

/** What to put in one restore besides the top-level chains. */
export type RestorePlan = RestoreBody & RestoreTail;

/**
 * The rules (`-A` lines) per table one restore input writes, counted as the input is made
 * (kubeproxy_sync_proxy_rules_iptables_last{table}). Chain declarations and `-X` deletions are
 * not rules, and neither are the jumps inserted into built-in chains: upstream's restore input,
 * which its gauge counts, has none (it ensures them with commands of their own).
 */
export interface WrittenRules {
  nat: number;
  filter: number;
}

/** Lines per piece of restore input handed to the command (see restoreChunks). */
const LINES_PER_CHUNK = 4096;

/**
 * The restore input starts with the nat table, whose lines need nothing read from the kernel:
 * a full sync writes them while its reads of the tables finish. (Upstream writes filter first;
 * each table commits on its own either way.)
 */
function* natHeadLines(plan: RestoreBody): Generator<string> {
  yield "*nat";
  if (plan.canary) yield chainLine(KUBE_PROXY_CANARY);
}

/** The lines of a plan's service ports (and the top-level ones, if it writes them). */
export function* keptLines(lines: readonly OwnedLine[], plan: RestoreBody): Generator<string> {
  for (const line of lines) if (isKept(line, plan)) yield line.text;
}

/** Whether `plan` writes `line`: a top-level line if it writes those, else if its owner is in. */
export function isKept(line: OwnedLine, plan: RestoreBody): boolean {
  return line.owner === null ? plan.writeTopLevel : plan.includeService(line.owner);
}

function* bodyLines(rules: IptablesRuleSet, plan: RestoreBody): Generator<string> {
  yield* natHeadLines(plan);
  yield* keptLines(rules.natChains, plan);
  yield* keptLines(rules.natRules, plan);
}

/** The first piece of a streamed restore input: the nat table's header. */
export function restoreHead(plan: RestoreBody): string {
  return [...natHeadLines(plan)].join("\n") + "\n";
}

/**
 * The rest: changed top-level nat chains (a partial sync's), stale nat chains (declared, which
 * flushes them, then deleted: no rule written above leads to them), the jumps, then the filter
 * and mangle tables.
 */
function* tailLines(
  rules: IptablesRenderSummary,
  plan: RestorePlan,
  written: WrittenRules,
): Generator<string> {
  for (const line of plan.changedTopLevelNat) {
    if (line.startsWith("-A ")) written.nat++;
    yield line;
  }
  for (const chain of plan.staleNatChains) yield chainLine(chain);
  for (const chain of plan.staleNatChains) yield `-X ${chain}`;
  for (const jump of plan.jumps) if (jump.table === "nat") yield jumpInsertLine(jump);
  yield "COMMIT";
  if (plan.writeFilter) {
    yield "*filter";
    yield* rules.filterChains;
    if (plan.declareKubeletFirewall && !rules.filterChains.includes(chainLine(KUBE_FIREWALL))) {
      yield chainLine(KUBE_FIREWALL);
    }
    if (plan.canary) yield chainLine(KUBE_PROXY_CANARY);
    written.filter += rules.filterRules.length;
    yield* rules.filterRules;
    for (const jump of plan.jumps) if (jump.table === "filter") yield jumpInsertLine(jump);
    yield "COMMIT";
  }

  if (plan.canary) yield* ["*mangle", chainLine(KUBE_PROXY_CANARY), "COMMIT"];
}

/** Lines joined into pieces of LINES_PER_CHUNK whole lines, made as they are read. */
function* chunked(lines: Iterable<string>): Generator<string> {
  let batch: string[] = [];
  for (const line of lines) {
    batch.push(line);
    if (batch.length === LINES_PER_CHUNK) {
      yield linesText(batch);
      batch = [];
    }
  }
  if (batch.length > 0) yield linesText(batch);
}

/**
 * The pieces that follow the last slice, ending the input (see tailLines); the rules among
 * them are added to `written` as the pieces are made.
 */
export function restoreTailChunks(
  rules: IptablesRenderSummary,
  plan: RestorePlan,
  written: WrittenRules = { nat: 0, filter: 0 },
): Iterable<string> {
  return chunked(tailLines(rules, plan, written));
}

/**
 * The restore input for a plan as pieces of whole lines, made as they are read: a sync hands
 * them to the runner, which encodes them one by one instead of joining one big string first.
 * Iterable any number of times.
 */
export function restoreChunks(rules: IptablesRuleSet, plan: RestorePlan): Iterable<string> {
  return {
    *[Symbol.iterator]() {
      yield* chunked(bodyLines(rules, plan));
      yield* chunked(tailLines(rules, plan, { nat: 0, filter: 0 }));
    },
  };
}

/** The complete restore input for a plan, as one string. */
export function buildRestorePayload(rules: IptablesRuleSet, plan: RestorePlan): string {
  return [...restoreChunks(rules, plan)].join("");
}

/** The plan of a full sync on a node that has none of our rules yet. */
export function emptyNodePlan(): RestorePlan {
  return {
    includeService: () => true,
    staleNatChains: [],
    jumps: [...missingJumps("filter", undefined), ...missingJumps("nat", undefined)],
    canary: true,
    declareKubeletFirewall: true,
    writeTopLevel: true,
    changedTopLevelNat: [],
    writeFilter: true,
  };
}

/** Exactly what a full sync on an empty node applies; the `render` command prints this. */
export function renderFullRestore(state: ProxyState, options: IptablesRenderOptions = {}): string {
  return buildRestorePayload(renderIptables(state, options), emptyNodePlan());
}
