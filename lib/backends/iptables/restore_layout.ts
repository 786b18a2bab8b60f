/**
 * In what order a sync hands the rendered nat lines to iptables-restore. The rules that land
 * are the same either way; what differs is how long the restore takes to parse them.
 */
import { keptLines, type RestoreBody, restoreHead, type WrittenRules } from "./restore_payload.ts";
import { linesText } from "../common/mod.ts";
import type { OwnedLine } from "./rule_buffer.ts";

/**
 * - "streamed": each slice is written as soon as it renders (the restore parses one slice while
 *   the next renders).
 * - "held": everything is written once the render ends (legacy after a render of 1 s or more:
 *   the restore holds the xtables lock from its first line, and `-w 5` fails a read of stdin
 *   still waiting 5 s later).
 */
export type NatLayoutKind = "streamed" | "held";

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
  const pieces = [restoreHead(body)];
  return {
    head: () => undefined,
    slice: (lines) => void pieces.push(sliceText(lines, body, sort, written)),
    held: () => pieces.splice(0),
  };
}
