/**
 * The table as the proxier last wrote it, kept as owners (the base, each service port) and
 * reference counts, so that a sync touches only what changed: replacing one service port's
 * objects marks the elements and chains it adds or drops, and `takeTransaction()` writes just
 * those. This is what keeps one endpoint change at tens of milliseconds at 100k+ elements.
 * When two owners want the same key with different values, the first keeps it (a conflict).
 */
import type { NftOwnedObjects } from "./_table_objects.ts";
import {
  hookText,
  type NftChain,
  type NftFamily,
  type NftSet,
  type NftTableModel,
  sameHook,
  sameRules,
  sameSetSpec,
} from "./table_model.ts";
import { TableStamp } from "./_table_stamp.ts";
import { type NftTransaction, ScriptWriter, setBody, tableRef } from "./transaction.ts";

interface Counted<T> {
  readonly value: T;
  refs: number;
}

interface OwnerRecord {
  readonly objects: NftOwnedObjects;
  /** Per element of `objects.elements`: whether this owner holds a reference. */
  readonly held: Uint8Array;
  readonly heldChains: readonly boolean[];
}

function chainText(ch: NftChain): string {
  return `c\u0000${ch.name}\u0000${JSON.stringify(ch.hook ?? null)}\u0000${ch.rules.join("\n")}`;
}

function setText(s: NftSet): string {
  return `s\u0000${s.name}\u0000${s.kind}\u0000${s.spec.join(";")}`;
}

/** An element or chain another owner already holds with a different value. */
export interface NftConflict {
  readonly owner: string;
  readonly what: string;
}

/** Reference-counted table content with change tracking since the last transaction. */
export class NftTableStore {
  readonly #chains = new Map<string, Counted<NftChain>>();
  readonly #sets = new Map<string, Counted<NftSet>>();
  // Element values by set and key; extra references (beyond the first) counted apart, since
  // almost every element has exactly one owner and 100k+ small objects would dominate a sync.
  readonly #elements = new Map<string, Map<string, string>>();
  readonly #extraRefs = new Map<string, number>();
  readonly #owners = new Map<string, OwnerRecord>();
  // What each touched object was at the last take (undefined = absent).
  #dirtyChains = new Map<string, NftChain | undefined>();
  #dirtySets = new Map<string, NftSet | undefined>();
  #dirtyElements = new Map<string, Map<string, string | undefined>>();
  #tracking = true;
  readonly #stamp = new TableStamp();

  /** An empty store for the table `family name`. */
  constructor(
    readonly family: NftFamily,
    readonly name: string,
    readonly comment: string,
  ) {}

  /** The fingerprint of everything held (see table_stamp.ts). */
  stamp(): readonly [number, number] {
    return this.#stamp.halves();
  }

  /** The owners currently held. */
  owners(): IterableIterator<string> {
    return this.#owners.keys();
  }

  /** The objects `owner` last gave, if any. */
  ownerObjects(owner: string): NftOwnedObjects | undefined {
    return this.#owners.get(owner)?.objects;
  }

  /** Replaces what `owner` wants (undefined removes it); returns the conflicts it met. */
  replace(owner: string, objects: NftOwnedObjects | undefined): NftConflict[] {
    const old = this.#owners.get(owner);
    if (old !== undefined) this.#release(old);
    this.#owners.delete(owner);
    if (objects === undefined) return [];
    const conflicts: NftConflict[] = [];
    for (const s of objects.sets) {
      const cur = this.#sets.get(s.name);
      if (cur === undefined) {
        this.#touchSet(s.name);
        this.#sets.set(s.name, { value: s, refs: 1 });
        this.#stamp.toggle(setText(s));
      } else cur.refs++;
    }
    const heldChains = objects.chains.map((ch) => {
      const cur = this.#chains.get(ch.name);
      if (cur === undefined) {
        this.#touchChain(ch.name);
        this.#chains.set(ch.name, { value: ch, refs: 1 });
        this.#stamp.toggle(chainText(ch));
        return true;
      }
      if (!sameRules(cur.value.rules, ch.rules) || !sameHook(cur.value.hook, ch.hook)) {
        conflicts.push({ owner, what: `chain ${ch.name}` });
        return false;
      }
      cur.refs++;
      return true;
    });
    const elements = objects.elements;
    const held = new Uint8Array(elements.length);
    let lastName = "";
    let set: Map<string, string> | undefined;
    for (let i = 0; i < elements.length; i++) {
      const e = elements[i]!;
      if (set === undefined || e.set !== lastName) {
        lastName = e.set;
        set = this.#elements.get(e.set);
        if (set === undefined) this.#elements.set(e.set, set = new Map());
      }
      const cur = set.get(e.key);
      if (cur === undefined) {
        this.#touchElement(e.set, e.key, set);
        set.set(e.key, e.rest);
        this.#stamp.toggleElement(e.set, e.key, e.rest);
        held[i] = 1;
      } else if (cur !== e.rest) {
        conflicts.push({ owner, what: `${e.set} element ${e.key}` });
      } else {
        const id = e.set + "\u0000" + e.key;
        this.#extraRefs.set(id, (this.#extraRefs.get(id) ?? 0) + 1);
        held[i] = 1;
      }
    }
    this.#owners.set(owner, { objects, held, heldChains });
    return conflicts;
  }

  #release(rec: OwnerRecord): void {
    const elements = rec.objects.elements;
    for (let i = 0; i < elements.length; i++) {
      if (rec.held[i] === 0) continue;
      const e = elements[i]!;
      const set = this.#elements.get(e.set)!;
      if (this.#extraRefs.size > 0) {
        const id = e.set + "\u0000" + e.key;
        const extra = this.#extraRefs.get(id);
        if (extra !== undefined) {
          if (extra === 1) this.#extraRefs.delete(id);
          else this.#extraRefs.set(id, extra - 1);
          continue;
        }
      }
      this.#touchElement(e.set, e.key, set);
      set.delete(e.key);
      this.#stamp.toggleElement(e.set, e.key, e.rest);
    }
    rec.objects.chains.forEach((ch, i) => {
      if (!rec.heldChains[i]) return;
      const cur = this.#chains.get(ch.name)!;
      if (--cur.refs === 0) {
        this.#touchChain(ch.name);
        this.#chains.delete(ch.name);
        this.#stamp.toggle(chainText(cur.value));
      }
    });
    for (const s of rec.objects.sets) {
      const cur = this.#sets.get(s.name)!;
      if (--cur.refs === 0) {
        this.#touchSet(s.name);
        this.#sets.delete(s.name);
        this.#stamp.toggle(setText(cur.value));
      }
    }
  }

  #touchChain(name: string): void {
    if (!this.#tracking) return;
    if (!this.#dirtyChains.has(name)) this.#dirtyChains.set(name, this.#chains.get(name)?.value);
  }

  #touchSet(name: string): void {
    if (!this.#tracking) return;
    if (!this.#dirtySets.has(name)) this.#dirtySets.set(name, this.#sets.get(name)?.value);
  }

  #touchElement(set: string, key: string, elements: Map<string, string>): void {
    if (!this.#tracking) return;
    let d = this.#dirtyElements.get(set);
    if (d === undefined) this.#dirtyElements.set(set, d = new Map());
    if (!d.has(key)) d.set(key, elements.get(key));
  }

  /**
   * Stops change tracking until the next markWritten(): for filling the store before a full
   * transaction, where every object is written anyway and tracking would only cost time.
   */
  suspendTracking(): void {
    this.markWritten();
    this.#tracking = false;
  }

  /** Forgets the changes since the last take (after a full transaction wrote `model()`). */
  markWritten(): void {
    this.#tracking = true;
    this.#dirtyChains = new Map();
    this.#dirtySets = new Map();
    this.#dirtyElements = new Map();
  }

  /** The whole table as held now (a copy: later changes to the store do not show). */
  model(): NftTableModel {
    return this.#model(true);
  }

  /**
   * The whole table as held now without copying the element maps: valid only until the next
   * replace(). For writing a full transaction, where copying 100k+ elements is wasted work.
   */
  view(): NftTableModel {
    return this.#model(false);
  }

  #model(copy: boolean): NftTableModel {
    const chains = new Map<string, NftChain>();
    for (const [n, c] of this.#chains) chains.set(n, c.value);
    const sets = new Map<string, NftSet>();
    for (const [n, s] of this.#sets) {
      const held = this.#elements.get(n) ?? new Map<string, string>();
      sets.set(n, { ...s.value, elements: copy ? new Map(held) : held });
    }
    return { family: this.family, name: this.name, comment: this.comment, chains, sets };
  }

  /**
   * The transaction from the table as last taken to now, then forgets the changes; null when
   * only a full transaction can do it (a base chain's hook or a set's declaration changed).
   */
  takeTransaction(): NftTransaction | null {
    const t = tableRef(this);
    const w = new ScriptWriter(t);
    for (const [name, before] of this.#dirtySets) {
      const now = this.#sets.get(name)?.value;
      if (before !== undefined && now !== undefined && !sameSetSpec(before, now)) return null;
    }
    for (const [name, before] of this.#dirtyChains) {
      const now = this.#chains.get(name)?.value;
      if (before !== undefined && now !== undefined && !sameHook(before.hook, now.hook)) {
        return null;
      }
    }
    const goneSets = new Set<string>();
    for (const [name, before] of this.#dirtySets) {
      const now = this.#sets.get(name)?.value;
      if (before === undefined && now !== undefined) {
        w.line(`add ${now.kind} ${t} ${name}${setBody(now)}`);
        w.setsAdded++;
      } else if (before !== undefined && now === undefined) goneSets.add(name);
    }
    const goneChains: string[] = [];
    for (const [name, before] of this.#dirtyChains) {
      const now = this.#chains.get(name)?.value;
      if (before === undefined && now !== undefined) {
        w.line(`add chain ${t} ${name}${hookText(now.hook)}`);
      } else if (before !== undefined && now === undefined) goneChains.push(name);
    }
    for (const [name, before] of this.#dirtyChains) {
      const now = this.#chains.get(name)?.value;
      if (now === undefined || (before !== undefined && sameRules(before.rules, now.rules))) {
        continue;
      }
      if (before !== undefined) w.line(`flush chain ${t} ${name}`);
      for (const r of now.rules) w.line(`add rule ${t} ${name} ${r}`);
      w.chainsWritten++;
    }
    const adds: [string, string[]][] = [];
    for (const [set, keys] of this.#dirtyElements) {
      const current = this.#elements.get(set);
      const deletes: string[] = [];
      const added: string[] = [];
      for (const [key, before] of keys) {
        const now = current?.get(key);
        if (now === before) continue;
        if (before !== undefined && !goneSets.has(set)) deletes.push(key);
        if (now !== undefined) added.push(key + now);
      }
      w.elements("delete", set, deletes);
      adds.push([set, added]);
    }
    for (const [set, added] of adds) w.elements("add", set, added);
    for (const n of goneChains) w.line(`flush chain ${t} ${n}`);
    for (const n of goneChains) {
      w.line(`delete chain ${t} ${n}`);
      w.chainsDeleted++;
    }
    for (const name of goneSets) {
      const before = this.#dirtySets.get(name)!;
      w.line(`delete ${before.kind} ${t} ${name}`);
      w.setsDeleted++;
    }
    this.markWritten();
    return w.finish();
  }
}
