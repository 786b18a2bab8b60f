/**
 * In what order a sync hands the rendered nat lines to iptables-restore, by flavour. The rules
 * that land are the same either way; what differs is how long the restore takes to parse them.
 */
import { linesText } from "../common/mod.ts";
import {
  chunkedLines,
  keptLines,
  type RestoreBody,
  restoreHead,
  restoreSlice,
} from "./restore_payload.ts";
import type { OwnedLine } from "./rule_buffer.ts";

/**
 * - "streamed": each slice is written as soon as it renders (legacy iptables; the restore parses
 *   one slice while the next renders).
 * - "held": everything is written once the render ends (legacy after a render of 1 s or more:
 *   the restore holds the xtables lock from its first line, and `-w 5` fails a read of stdin
 *   still waiting 5 s later).
 * - "declarations first": every nat chain declaration, sorted by name, then every rule
 *   (iptables-nft). iptables-nft-restore keeps the chains it creates in a list sorted by name,
 *   so declarations in a render's hash order cost a walk of that list each: at 1,000 services x
 *   10 endpoints (11,000 chains) its restore took ~3.0 s instead of ~1.7 s. With legacy
 *   iptables sorted declarations are slower instead (at 10,000 services x 10 endpoints 9.6-9.7 s
 *   against 6.8-7.6 s), so it keeps the render's order.
 */
export type NatLayoutKind = "streamed" | "held" | "declarations first";

/** Where the nat lines of one restore go as the render yields them. */
export interface NatLayout {
  /** The nat table's header, if it is written before any slice. */
  head(): string | undefined;
  /** Takes one rendered slice; returns its text if it is written now. */
  slice(lines: readonly OwnedLine[]): string | undefined;
  /** What was held back, in the order it is written, once the last slice is in. */
  held(): Iterable<string>;
}

/** The layout of one restore's nat lines; `body` says which lines the restore keeps. */
export function natLayout(kind: NatLayoutKind, body: RestoreBody): NatLayout {
  switch (kind) {
    case "streamed":
      return {
        head: () => restoreHead(body),
        slice: (lines) => restoreSlice(lines, body),
        held: () => [],
      };
    case "held": {
      const pieces = [restoreHead(body)];
      return {
        head: () => undefined,
        slice: (lines) => void pieces.push(restoreSlice(lines, body)),
        held: () => pieces.splice(0),
      };
    }
    case "declarations first":
      return declarationsFirst(body);
  }
}

function declarationsFirst(body: RestoreBody): NatLayout {
  const chains: string[] = [];
  /** The rules of each slice, joined per slice. */
  const rules: string[] = [];
  return {
    head: () => restoreHead(body),
    slice(lines) {
      const sliceRules: string[] = [];
      for (const line of keptLines(lines, body)) {
        if (line.startsWith(":")) chains.push(line);
        else sliceRules.push(line);
      }
      if (sliceRules.length > 0) rules.push(linesText(sliceRules));
      return undefined;
    },
    *held() {
      // Declarations are `:NAME - [0:0]`, so sorting the lines sorts the names.
      yield* chunkedLines(chains.sort());
      chains.length = 0;
      yield* rules.splice(0);
    },
  };
}
