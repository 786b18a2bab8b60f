/**
 * Turns desired table models into one `nft -f -` script (one atomic transaction). A full
 * transaction recreates the table from nothing; a partial one carries only the difference
 * between the last applied model and the new one: new and changed chains (add + flush +
 * rules), element deletes and adds, and deletions of objects no longer wanted. Pure.
 */
import { linesText } from "../common/mod.ts";
import {
  hookText,
  nftQuote,
  type NftSet,
  type NftTableModel,
  sameHook,
  sameRules,
  sameSetSpec,
} from "./table_model.ts";

/** The transaction that changes nothing (no nft run at all). */
export const EMPTY_TRANSACTION: NftTransaction = {
  script: "",
  chainsWritten: 0,
  chainsDeleted: 0,
  setsAdded: 0,
  setsDeleted: 0,
  elementsAdded: 0,
  elementsDeleted: 0,
};

/** Elements per `add element` / `delete element` command (keeps lines a sane length). */
export const ELEMENTS_PER_COMMAND = 1000;

/** A transaction script and what it touches, for logs, metrics and tests. */
export interface NftTransaction {
  readonly script: string;
  /** Chains (re)written: added or flushed and refilled. */
  readonly chainsWritten: number;
  readonly chainsDeleted: number;
  readonly setsAdded: number;
  readonly setsDeleted: number;
  readonly elementsAdded: number;
  readonly elementsDeleted: number;
}

/** The declaration body of a set or map, `{ type … ; flags … ; }`. */
export function setBody(s: NftSet): string {
  return ` { ${s.spec.join(" ; ")} ; }`;
}

/** Accumulates script lines and counts what they touch (shared with table_store.ts). */
export class ScriptWriter {
  readonly lines: string[] = [];
  chainsWritten = 0;
  chainsDeleted = 0;
  setsAdded = 0;
  setsDeleted = 0;
  elementsAdded = 0;
  elementsDeleted = 0;

  constructor(readonly table: string) {}

  line(text: string): void {
    this.lines.push(text);
  }

  elements(verb: "add" | "delete", set: string, items: readonly string[]): void {
    for (let i = 0; i < items.length; i += ELEMENTS_PER_COMMAND) {
      const chunk = items.slice(i, i + ELEMENTS_PER_COMMAND);
      this.lines.push(`${verb} element ${this.table} ${set} { ${chunk.join(", ")} }`);
    }
    if (verb === "add") this.elementsAdded += items.length;
    else this.elementsDeleted += items.length;
  }

  finish(): NftTransaction {
    return {
      script: linesText(this.lines),
      chainsWritten: this.chainsWritten,
      chainsDeleted: this.chainsDeleted,
      setsAdded: this.setsAdded,
      setsDeleted: this.setsDeleted,
      elementsAdded: this.elementsAdded,
      elementsDeleted: this.elementsDeleted,
    };
  }
}

/** `family name` of a table, as every command names it. */
export function tableRef(m: { family: string; name: string }): string {
  return `${m.family} ${m.name}`;
}

/** The element texts of a set, `key` + `rest`. */
function elementTexts(s: NftSet): string[] {
  const out: string[] = [];
  for (const [k, rest] of s.elements) out.push(k + rest);
  return out;
}

/**
 * The transaction that makes the table exactly `model`, whatever was there: the table is
 * created if missing, deleted and recreated in the same transaction, so packets never see
 * a half-written table.
 */
export function fullTransaction(model: NftTableModel): NftTransaction {
  const t = tableRef(model);
  const w = new ScriptWriter(t);
  w.line(`add table ${t}`);
  w.line(`delete table ${t}`);
  w.line(`add table ${t} { comment ${nftQuote(model.comment)} ; }`);
  for (const ch of model.chains.values()) w.line(`add chain ${t} ${ch.name}${hookText(ch.hook)}`);
  for (const s of model.sets.values()) {
    w.line(`add ${s.kind} ${t} ${s.name}${setBody(s)}`);
    w.setsAdded++;
  }
  for (const ch of model.chains.values()) {
    for (const r of ch.rules) w.line(`add rule ${t} ${ch.name} ${r}`);
    w.chainsWritten++;
  }
  for (const s of model.sets.values()) w.elements("add", s.name, elementTexts(s));
  return w.finish();
}

/**
 * The transaction from `prev` (what the last successful transaction left) to `next`, or null
 * when only a full transaction can do it (another family or table, a base chain's hook or a
 * set's declaration changed).
 */
export function partialTransaction(
  prev: NftTableModel,
  next: NftTableModel,
): NftTransaction | null {
  if (prev.family !== next.family || prev.name !== next.name || prev.comment !== next.comment) {
    return null;
  }
  for (const ch of next.chains.values()) {
    const old = prev.chains.get(ch.name);
    if (old !== undefined && !sameHook(old.hook, ch.hook)) return null;
    if (old === undefined && ch.hook !== undefined) return null;
  }
  for (const s of next.sets.values()) {
    const old = prev.sets.get(s.name);
    if (old !== undefined && !sameSetSpec(old, s)) return null;
  }
  const t = tableRef(next);
  const w = new ScriptWriter(t);

  // 1. New chains and sets, empty, so rules and elements below can refer to them.
  for (const ch of next.chains.values()) {
    if (!prev.chains.has(ch.name)) w.line(`add chain ${t} ${ch.name}`);
  }
  for (const s of next.sets.values()) {
    if (!prev.sets.has(s.name)) {
      w.line(`add ${s.kind} ${t} ${s.name}${setBody(s)}`);
      w.setsAdded++;
    }
  }
  // 2. New and changed chains get their rules.
  for (const ch of next.chains.values()) {
    const old = prev.chains.get(ch.name);
    if (old !== undefined && sameRules(old.rules, ch.rules)) continue;
    if (old !== undefined) w.line(`flush chain ${t} ${ch.name}`);
    for (const r of ch.rules) w.line(`add rule ${t} ${ch.name} ${r}`);
    w.chainsWritten++;
  }
  // 3. Elements: deletes (gone or changed) before adds (new or changed).
  for (const s of next.sets.values()) {
    const old = prev.sets.get(s.name);
    if (old === undefined) {
      w.elements("add", s.name, elementTexts(s));
      continue;
    }
    const deletes: string[] = [];
    const adds: string[] = [];
    for (const [k, rest] of old.elements) {
      const now = s.elements.get(k);
      if (now === undefined || now !== rest) deletes.push(k);
    }
    for (const [k, rest] of s.elements) {
      if (old.elements.get(k) !== rest) adds.push(k + rest);
    }
    w.elements("delete", s.name, deletes);
    w.elements("add", s.name, adds);
  }
  // 4. Chains no longer wanted: flush all first (they may jump to each other), then delete.
  const goneChains = [...prev.chains.keys()].filter((n) => !next.chains.has(n));
  for (const n of goneChains) w.line(`flush chain ${t} ${n}`);
  for (const n of goneChains) {
    w.line(`delete chain ${t} ${n}`);
    w.chainsDeleted++;
  }
  // 5. Sets no longer wanted (nothing refers to them once their chains are gone).
  for (const s of prev.sets.values()) {
    if (!next.sets.has(s.name)) {
      w.line(`delete ${s.kind} ${t} ${s.name}`);
      w.setsDeleted++;
    }
  }
  return w.finish();
}
