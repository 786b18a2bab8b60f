/**
 * In what order a sync hands the rendered nat lines to iptables-restore. The rules that land
 * are the same either way; what differs is how long the restore takes to parse them.
 */
import {
  isKept,
  keptLines,
  type RestoreBody,
  restoreHead,
  type WrittenRules,
} from "./restore_payload.ts";
import { linesText } from "../common/mod.ts";
import { chainLine } from "../../netfilter/mod.ts";
import { KUBE_MARK_MASQ, SEP_PREFIX } from "./chain_names.ts";
import type { OwnedLine } from "./rule_buffer.ts";

/**
 * - "streamed": each slice is written as soon as it renders (the restore parses one slice while
 *   the next renders).
 * - "held": everything is written once the render ends (after a render of 1 s or more: the
 *   restore holds the xtables lock from its first line, and `-w 5` fails a read of stdin still
 *   waiting 5 s later).
 * - "saved": held, every chain declared first, in reverse name order, then each chain's rules
 *   (in render order), chains in name order as iptables-save prints them. Legacy
 *   iptables-restore keeps its chains in a name-sorted list and inserts each new one by walking
 *   it from the nearest entry of an index it rebuilds every 355 new chains: in the render's
 *   hash order or in name order a new chain walks past up to a few hundred others, in reverse
 *   name order it goes first at once. Rules that come chain by chain in name order are
 *   cheaper to add than in the render's order. Two exceptions, both for libxtables' table of
 *   declared names: see DECLARED_LAST and DNAT_BUCKET.
 */
export type NatLayoutKind = "streamed" | "held" | "saved";

/** How a layout writes each slice. */
export interface NatLayoutOptions {
  /**
   * Sort each slice's chain declarations by name (iptables-nft). iptables-nft-restore creates
   * chains whose names come in order much faster than in the render's hash order. Only within
   * a slice (~100 chains), though: declaring them all first in name order makes the restore
   * faster still, but iptables-nft then takes far longer to list the table (iptables-save
   * included), which slice-sorted chains do not. Legacy iptables gains nothing from sorting.
   */
  readonly sortDeclarations?: boolean;
  /** Where the rules of the slices written are counted, as each slice is taken. */
  readonly written?: WrittenRules;
}

/** Where the nat lines of one restore go as the render yields them. */
export interface NatLayout {
  /** The nat table's header, if it is written before any slice. */
  head(): string | undefined;
  /** Takes one rendered slice; returns its text if it is written now. */
  slice(lines: readonly OwnedLine[]): string | undefined;
  /** What was held back, in the order it is written, once the last slice is in. */
  held(): Iterable<string>;
}

/**
 * The text of one slice: the lines the restore keeps, declarations first (sorted if asked);
 * its rules are added to `written`.
 */
function sliceText(
  lines: readonly OwnedLine[],
  body: RestoreBody,
  sort: boolean,
  written: WrittenRules,
): string {
  const kept = [...keptLines(lines, body)];
  // A slice declares its chains before its rules: every line from the first rule on is one.
  let end = 0;
  while (end < kept.length && kept[end]!.startsWith(":")) end++;
  written.nat += kept.length - end;
  if (!sort) return linesText(kept);
  // `:NAME - [0:0]` lines sort by NAME.
  return linesText(kept.slice(0, end).sort().concat(kept.slice(end)));
}

/** The layout of one restore's nat lines; `body` says which lines the restore keeps. */
export function natLayout(
  kind: NatLayoutKind,
  body: RestoreBody,
  options: NatLayoutOptions = {},
): NatLayout {
  const sort = options.sortDeclarations ?? false;
  const written = options.written ?? { nat: 0, filter: 0 };
  if (kind === "streamed") {
    return {
      head: () => restoreHead(body),
      slice: (lines) => sliceText(lines, body, sort, written),
      held: () => [],
    };
  }
  if (kind === "saved") return savedOrderLayout(body, written);
  const pieces = [restoreHead(body)];
  return {
    head: () => undefined,
    slice: (lines) => void pieces.push(sliceText(lines, body, sort, written)),
    held: () => pieces.splice(0),
  };
}

/**
 * Declarations, and runs of rules, per piece of held input handed to the restore: pieces small
 * enough to die young once written (a larger string goes to V8's large-object space, which
 * only a full collection frees).
 */
const PER_PIECE = 128;

/** `:`, which starts a chain declaration. */
const COLON = 0x3a;

/**
 * The chain the "saved" layout declares after all others: the jump target of most nat rules
 * (every service chain's masquerade rule and every endpoint chain's hairpin rule). For each
 * jump, iptables-restore first looks its target up in libxtables' table of the chain names
 * declared so far (512 buckets, each a list searched from its newest name): a target declared
 * last is found at once, while the one declared in name order sits behind every later chain of
 * its bucket. Where it is declared changes no rule.
 */
const DECLARED_LAST = KUBE_MARK_MASQ;

/** Buckets of libxtables' table of declared chain names (its NOTARGET_HSIZE). */
const NAME_TABLE_BUCKETS = 512;

/** The bucket of libxtables' table that `name` goes to (djb2 over its bytes; names are ASCII). */
export function nameTableBucket(name: string): number {
  let hash = 5381;
  for (let i = 0; i < name.length; i++) hash = (Math.imul(hash, 33) + name.charCodeAt(i)) >>> 0;
  return hash % NAME_TABLE_BUCKETS;
}

/**
 * The bucket of `DNAT`. Every endpoint chain's DNAT rule makes libxtables look `DNAT` up in the
 * table of declared names before it finds the extension, and the miss walks the whole bucket
 * (~200 names at 110,000 chains). The "saved" layout declares the endpoint chains of this
 * bucket only after the rules of all other endpoint chains, so those ~100,000 lookups find
 * the bucket nearly empty: 6.5% fewer instructions for the restore of 10,000 services × 10
 * endpoints (callgrind). Where they are declared changes no rule.
 */
const DNAT_BUCKET = nameTableBucket("DNAT");

/** Endpoint chain names sort below this (their hash part is base32: A-Z, 2-7). */
const AFTER_ENDPOINT_CHAINS = `${SEP_PREFIX}~`;

/**
 * The "saved" layout. Each slice's rules are joined run by run (a run: consecutive rules of one
 * chain), so what is held weighs about what the "held" layout holds, and each run is let go
 * once written; at the end each chain's runs follow in the order of the sorted declarations,
 * then those of chains this input does not declare (name order); the runs of one chain stay in
 * render order. Lines are grouped by the chain the render named (OwnedLine.chain), which is
 * the declaration's own string where the render reuses it, so most lookups need no hashing.
 */
function savedOrderLayout(body: RestoreBody, written: WrittenRules): NatLayout {
  /** The names of the chains declared. */
  const declared: string[] = [];
  /** Each chain's runs of rules, joined. */
  const runs = new Map<string, string | string[]>();
  const closeRun = (chain: string, lines: string[]) => {
    const text = linesText(lines);
    const before = runs.get(chain);
    if (before === undefined) runs.set(chain, text);
    else if (typeof before === "string") runs.set(chain, [before, text]);
    else before.push(text);
  };
  return {
    head: () => undefined,
    slice(lines) {
      let run: string[] = [];
      let chain = "";
      for (const line of lines) {
        if (!isKept(line, body)) continue;
        if (line.text.charCodeAt(0) === COLON) {
          declared.push(line.chain);
          continue;
        }
        written.nat++;
        if (run.length === 0 || line.chain !== chain) {
          if (run.length > 0) closeRun(chain, run);
          run = [];
          chain = line.chain;
        }
        run.push(line.text);
      }
      if (run.length > 0) closeRun(chain, run);
      return undefined;
    },
    *held() {
      yield restoreHead(body);
      // Names sort as their `:NAME - [0:0]` lines do (no name holds a space); they are
      // declared in reverse, DECLARED_LAST last.
      declared.sort();
      /** Endpoint chains of DNAT's bucket, declared after the other endpoint chains' rules. */
      const deferred: string[] = [];
      let lines: string[] = [];
      let last = false;
      for (let i = declared.length - 1; i >= 0; i--) {
        const name = declared[i]!;
        if (name === DECLARED_LAST) {
          last = true;
          continue;
        }
        if (name.startsWith(SEP_PREFIX) && nameTableBucket(name) === DNAT_BUCKET) {
          deferred.push(name);
          continue;
        }
        lines.push(chainLine(name));
        if (lines.length >= PER_PIECE) {
          yield linesText(lines);
          lines = [];
        }
      }
      if (last) lines.push(chainLine(DECLARED_LAST));
      if (lines.length > 0) yield linesText(lines);
      let piece: string[] = [];
      const take = (chain: string) => {
        const texts = runs.get(chain);
        if (texts === undefined) return;
        runs.delete(chain);
        if (typeof texts === "string") piece.push(texts);
        else for (const text of texts) piece.push(text);
      };
      // `deferred` holds names in reverse order: walked from its end, it follows `declared`.
      let next = deferred.length - 1;
      const takeDeferred = () => {
        if (deferred.length === 0) return;
        piece.push(linesText(deferred.map(chainLine)));
        for (let k = deferred.length - 1; k >= 0; k--) take(deferred[k]!);
        deferred.length = 0;
      };
      for (let i = 0; i < declared.length; i++) {
        const name = declared[i]!;
        if (next >= 0 && name === deferred[next]) {
          next--;
          continue;
        }
        if (name > AFTER_ENDPOINT_CHAINS) takeDeferred();
        take(name);
        if (piece.length >= PER_PIECE) {
          yield piece.join("");
          piece = [];
        }
      }
      takeDeferred();
      declared.length = 0;
      for (const chain of [...runs.keys()].sort()) take(chain);
      if (piece.length > 0) yield piece.join("");
    },
  };
}
