/**
 * Packs a rendered rule set into iptables-restore input (for `--noflush`): full syncs carry
 * everything plus jump rules and canaries; partial syncs carry the top-level chains whole and
 * only the chains of changed service ports; stale chains are flushed and deleted in the same
 * input.
 */
import type { ProxyState } from "../../proxy/mod.ts";
import { KUBE_FIREWALL, KUBE_PROXY_CANARY } from "./chain_names.ts";
import { jumpInsertLine, type JumpRule, missingJumps } from "./jump_chains.ts";
import { renderIptables } from "./render.ts";
import type { IptablesRenderOptions } from "./render_options.ts";
import type { IptablesRuleSet } from "./render.ts";
import { chainLine } from "./rule_buffer.ts";

/** What to put in one restore besides the top-level chains. */
export interface RestorePlan {
  /** Whether the chains of this service port key are (re)written. */
  readonly includeService: (key: string) => boolean;
  /** Per-service nat chains to flush and delete (`-X`). */
  readonly staleNatChains: readonly string[];
  /** Jump rules to insert into built-in chains. */
  readonly jumps: readonly JumpRule[];
  /** Also (re)create KUBE-PROXY-CANARY in mangle, nat and filter. */
  readonly canary: boolean;
  /** KUBE-FIREWALL does not exist yet and the rule set does not declare it. */
  readonly declareKubeletFirewall: boolean;
}

/** Lines per piece of restore input handed to the command (see restoreChunks). */
const LINES_PER_CHUNK = 4096;

/** Every line of the restore input for a plan, in order. */
function* restoreLines(rules: IptablesRuleSet, plan: RestorePlan): Generator<string> {
  const keep = (owner: string | null) => owner === null || plan.includeService(owner);

  yield "*filter";
  yield* rules.filterChains;
  if (plan.declareKubeletFirewall && !rules.filterChains.includes(chainLine(KUBE_FIREWALL))) {
    yield chainLine(KUBE_FIREWALL);
  }
  if (plan.canary) yield chainLine(KUBE_PROXY_CANARY);
  yield* rules.filterRules;
  for (const jump of plan.jumps) if (jump.table === "filter") yield jumpInsertLine(jump);
  yield "COMMIT";

  yield "*nat";
  for (const line of rules.natChains) if (keep(line.owner)) yield line.text;
  for (const chain of plan.staleNatChains) yield chainLine(chain);
  if (plan.canary) yield chainLine(KUBE_PROXY_CANARY);
  for (const line of rules.natRules) if (keep(line.owner)) yield line.text;
  for (const chain of plan.staleNatChains) yield `-X ${chain}`;
  for (const jump of plan.jumps) if (jump.table === "nat") yield jumpInsertLine(jump);
  yield "COMMIT";

  if (plan.canary) yield* ["*mangle", chainLine(KUBE_PROXY_CANARY), "COMMIT"];
}

/**
 * The restore input for a plan as pieces of whole lines, made as they are read: a sync hands
 * them to the runner, which encodes them one by one instead of joining one big string first.
 * Iterable any number of times.
 */
export function restoreChunks(rules: IptablesRuleSet, plan: RestorePlan): Iterable<string> {
  return {
    *[Symbol.iterator]() {
      let batch: string[] = [];
      for (const line of restoreLines(rules, plan)) {
        batch.push(line);
        if (batch.length === LINES_PER_CHUNK) {
          yield batch.join("\n") + "\n";
          batch = [];
        }
      }
      if (batch.length > 0) yield batch.join("\n") + "\n";
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
  };
}

/** Exactly what a full sync on an empty node applies; the `render` command prints this. */
export function renderFullRestore(state: ProxyState, options: IptablesRenderOptions = {}): string {
  return buildRestorePayload(renderIptables(state, options), emptyNodePlan());
}
