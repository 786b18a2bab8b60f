/**
 * An order-independent 64-bit fingerprint of a table's content: the XOR of two FNV-1a-style
 * 32-bit hashes of every chain, set declaration and element. Adding or removing one object
 * XORs its hash in or out, so the table store keeps it current at no cost per sync, and a
 * restarted proxy can tell "the kernel already holds exactly this table" by reading one map.
 */

const OFFSET_A = 0x811c9dc5;
const OFFSET_B = 0x01000193 ^ 0x5bd1e995;

/** Two 32-bit hashes of `text` (FNV-1a with two different offset bases). */
export function textHash(text: string): readonly [number, number] {
  let a = OFFSET_A;
  let b = OFFSET_B;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x0100019d);
  }
  return [a >>> 0, b >>> 0];
}

/** A running XOR of hashes. */
export class TableStamp {
  #a = 0;
  #b = 0;
  // The hash being fed (see toggleElement): fields, not a returned pair, so that 100k+
  // elements per full sync allocate nothing here.
  #ha = 0;
  #hb = 0;

  #feed(text: string): void {
    let a = this.#ha;
    let b = this.#hb;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      a = Math.imul(a ^ c, 0x01000193);
      b = Math.imul(b ^ c, 0x0100019d);
    }
    this.#ha = a;
    this.#hb = b;
  }

  /**
   * XORs in (or out) the element `key` + `rest` of `set`: the same as
   * toggle(`e\u0000${set}\u0000${key}${rest}`) without building that string.
   */
  toggleElement(set: string, key: string, rest: string): void {
    this.#ha = OFFSET_A;
    this.#hb = OFFSET_B;
    this.#feed("e\u0000");
    this.#feed(set);
    this.#feed("\u0000");
    this.#feed(key);
    this.#feed(rest);
    this.#a = (this.#a ^ (this.#ha >>> 0)) >>> 0;
    this.#b = (this.#b ^ (this.#hb >>> 0)) >>> 0;
  }

  /** XORs the hash of `text` in (or out: XOR is its own inverse). */
  toggle(text: string): void {
    const [a, b] = textHash(text);
    this.#a = (this.#a ^ a) >>> 0;
    this.#b = (this.#b ^ b) >>> 0;
  }

  /** The two halves, for the `sync-stamp` map elements. */
  halves(): readonly [number, number] {
    return [this.#a, this.#b];
  }
}

/** The map element text of a stamp: `0 : 0x…, 1 : 0x…` (mark-typed keys and values). */
export function stampElements(halves: readonly [number, number]): string {
  const hex = (n: number) => "0x" + n.toString(16).padStart(8, "0");
  return `0x00000000 : ${hex(halves[0])}, 0x00000001 : ${hex(halves[1])}`;
}

/** Reads the two halves back from `nft list map` output, or null when absent or malformed. */
export function parseStamp(listing: string): readonly [number, number] | null {
  const a = /0x0*0 : (0x[0-9a-f]+)/.exec(listing);
  const b = /0x0*1 : (0x[0-9a-f]+)/.exec(listing);
  if (a === null || b === null) return null;
  return [Number(a[1]) >>> 0, Number(b[1]) >>> 0];
}
