/**
 * The objects one owner (the fixed base, or one service port) wants in the table: chains,
 * sets and elements. Several owners may want the same shared chain or element; the table
 * store (table_store.ts) merges owners and counts who wants what.
 */
import type { NftChain, NftHook, NftSet } from "./table_model.ts";

/** One element of one set or map: its key text and the rest (` comment "…"`, ` : value`). */
export interface NftElementRef {
  readonly set: string;
  readonly key: string;
  readonly rest: string;
}

/** Everything one owner wants. Sets carry no elements here; elements are listed apart. */
export interface NftOwnedObjects {
  readonly chains: readonly NftChain[];
  readonly sets: readonly NftSet[];
  readonly elements: readonly NftElementRef[];
}

const NO_ELEMENTS: ReadonlyMap<string, string> = new Map();

/** Collects one owner's objects; repeats of a chain, set or element key are ignored. */
export class ObjectCollector {
  readonly #chains = new Map<string, NftChain>();
  readonly #sets = new Map<string, NftSet>();
  readonly #elements: NftElementRef[] = [];
  readonly #keys = new Set<string>();

  /** Adds a chain unless one of that name is already collected. */
  chain(name: string, rules: readonly string[], hook?: NftHook): void {
    if (this.#chains.has(name)) return;
    this.#chains.set(name, hook === undefined ? { name, rules } : { name, hook, rules });
  }

  /** Whether a chain of that name is collected. */
  hasChain(name: string): boolean {
    return this.#chains.has(name);
  }

  /** Declares a set or map (first declaration wins). */
  set(name: string, kind: "set" | "map", spec: readonly string[]): void {
    if (!this.#sets.has(name)) this.#sets.set(name, { name, kind, spec, elements: NO_ELEMENTS });
  }

  /** Whether this owner already has `key` in `set`. */
  hasElement(set: string, key: string): boolean {
    return this.#keys.has(set + "\u0000" + key);
  }

  /** Adds an element unless this owner already has that key in that set. */
  element(set: string, key: string, rest = ""): void {
    const id = set + "\u0000" + key;
    if (this.#keys.has(id)) return;
    this.#keys.add(id);
    this.#elements.push({ set, key, rest });
  }

  /** Adds an element the caller knows this owner adds only once (no repeat check). */
  uniqueElement(set: string, key: string, rest: string): void {
    this.#elements.push({ set, key, rest });
  }

  /** The collected objects. */
  objects(): NftOwnedObjects {
    return {
      chains: [...this.#chains.values()],
      sets: [...this.#sets.values()],
      elements: this.#elements,
    };
  }
}
