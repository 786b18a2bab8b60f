/**
 * The desired content of one `kube-proxy` table as plain data: what the renderer produces, what
 * the transaction builder diffs, and what the test fake holds. Rules and element texts are nft
 * syntax already; nothing here does I/O.
 */

/** The nft families nftables mode programs (one table each, never `inet`). */
export type NftFamily = "ip" | "ip6";

/** The hook of a base chain: `type <type> hook <hook> priority <priority>`. */
export interface NftHook {
  readonly type: "filter" | "nat";
  readonly hook: "prerouting" | "input" | "forward" | "output" | "postrouting";
  readonly priority: number;
}

/** One chain: a base chain when `hook` is set, else a regular chain reached by jump/goto. */
export interface NftChain {
  readonly name: string;
  readonly hook?: NftHook;
  readonly rules: readonly string[];
}

/**
 * One set or map. `spec` holds its declaration statements (`type …`, `flags …`, `timeout …`,
 * `comment "…"`); `elements` maps an element's key text to the rest of its text (a
 * ` comment "…"` and/or ` : value`), "" for a plain set member.
 */
export interface NftSet {
  readonly name: string;
  readonly kind: "set" | "map";
  readonly spec: readonly string[];
  readonly elements: ReadonlyMap<string, string>;
}

/** One table: chains and sets by name, in the order they were first added. */
export interface NftTableModel {
  readonly family: NftFamily;
  readonly name: string;
  readonly comment: string;
  readonly chains: ReadonlyMap<string, NftChain>;
  readonly sets: ReadonlyMap<string, NftSet>;
}

/** The declaration body of a chain, `{ type nat hook output priority -100 ; }`, or "". */
export function hookText(hook: NftHook | undefined): string {
  return hook === undefined
    ? ""
    : ` { type ${hook.type} hook ${hook.hook} priority ${hook.priority} ; }`;
}

/** Whether two set declarations are the same (same kind and statements). */
export function sameSetSpec(a: NftSet, b: NftSet): boolean {
  return a.kind === b.kind && a.spec.length === b.spec.length &&
    a.spec.every((s, i) => s === b.spec[i]);
}

/** Whether two chain hooks are the same (both regular, or the same type, hook and priority). */
export function sameHook(a: NftHook | undefined, b: NftHook | undefined): boolean {
  if (a === undefined || b === undefined) return a === b;
  return a.type === b.type && a.hook === b.hook && a.priority === b.priority;
}

/** Whether two rule lists are identical. */
export function sameRules(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((r, i) => r === b[i]);
}

const COMMENT_UNSAFE = /[^A-Za-z0-9 ./:_\-[\]]/g;

/**
 * A double-quoted nft string that nothing can break out of: every character outside a small
 * safe alphabet (quotes, backslashes, semicolons, braces, newlines, `#`…) becomes "_", and the
 * text is cut to the 128 bytes nft keeps for comments.
 */
export function nftQuote(text: string): string {
  return `"${text.replace(COMMENT_UNSAFE, "_").slice(0, 128)}"`;
}
