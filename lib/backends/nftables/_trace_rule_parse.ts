/**
 * Reads one nft rule of the `kube-proxy` table into the expressions the tracer evaluates. It
 * knows exactly the expressions lib/backends/nftables writes, in both spellings: as written
 * (`mark set mark or 0x4000`, `meta l4proto tcp dnat ip addr . port to …`) and as
 * `nft list table` prints them back (`meta mark set meta mark | 0x00004000`, `dnat ip to …`).
 * Anything else is refused by name, so the tracer never guesses. Pure.
 */

/** A packet field a rule can read. */
export type NftField = "saddr" | "daddr" | "l4proto" | "sport" | "dport";

/** One expression of a rule, in rule order. Matches first, then statements and verdicts. */
export type NftExpr =
  | { readonly kind: "ctStateNew" }
  | { readonly kind: "ctStatusDnat" }
  | { readonly kind: "fibLocal"; readonly field: "saddr" | "daddr" }
  | { readonly kind: "iifname"; readonly negate: boolean; readonly pattern: string }
  /** `FIELDS [!=] VALUE`: one field compared to an address, CIDR, protocol or number. */
  | {
    readonly kind: "compare";
    readonly field: NftField;
    readonly negate: boolean;
    readonly value: string;
  }
  /** `FIELD [!=] { VALUE, ... }`: one field compared to the values of an anonymous set. */
  | {
    readonly kind: "compareAny";
    readonly field: NftField;
    readonly negate: boolean;
    readonly values: readonly string[];
  }
  /** `FIELDS [!=] @SET`: the concatenated fields are (not) an element of SET. */
  | {
    readonly kind: "inSet";
    readonly fields: readonly NftField[];
    readonly negate: boolean;
    readonly set: string;
  }
  /** `FIELDS vmap @MAP`: the verdict of the matching element, if any. */
  | { readonly kind: "vmap"; readonly fields: readonly NftField[]; readonly map: string }
  /** `mark and M == 0` (true when none of M's bits are set). */
  | { readonly kind: "markClear"; readonly mask: number }
  /** `jhash FIELDS mod N seed S == V`: one of N equal shares of the hash space. */
  | { readonly kind: "jhash"; readonly hash: string; readonly mod: number; readonly value: number }
  | { readonly kind: "markOr"; readonly mask: number }
  | { readonly kind: "markXor"; readonly mask: number }
  /** `update @SET { ip saddr }`: remember the source in an affinity set. */
  | { readonly kind: "updateSet"; readonly set: string }
  /** `dnat … to ip:port`. */
  | { readonly kind: "dnatTo"; readonly ip: string; readonly port: number }
  /** `dnat … to FIELDS . numgen random mod N [offset K] map @MAP`. */
  | {
    readonly kind: "dnatMap";
    readonly fields: readonly NftField[];
    readonly mod: number;
    readonly offset: number;
    readonly map: string;
  }
  | { readonly kind: "masquerade" }
  | { readonly kind: "jump" | "goto"; readonly chain: string }
  | { readonly kind: "return" | "accept" | "drop" | "reject" };

const FIELD_WORDS: ReadonlyArray<readonly [RegExp, NftField]> = [
  [/^ip6? saddr\b/, "saddr"],
  [/^ip6? daddr\b/, "daddr"],
  [/^meta l4proto\b/, "l4proto"],
  [/^(?:th|tcp|udp|sctp) dport\b/, "dport"],
  [/^(?:th|tcp|udp|sctp) sport\b/, "sport"],
];

/** Reads `FIELD ( . FIELD )*` at the start of `text`; null when no field starts there. */
function readFields(text: string): { fields: NftField[]; rest: string } | null {
  const fields: NftField[] = [];
  let rest = text;
  for (;;) {
    const hit = FIELD_WORDS.find(([re]) => re.test(rest));
    if (hit === undefined) break;
    fields.push(hit[1]);
    rest = rest.replace(hit[0], "").trimStart();
    if (!rest.startsWith(". ")) break;
    const after = rest.slice(2);
    if (!FIELD_WORDS.some(([re]) => re.test(after))) break;
    rest = after;
  }
  return fields.length === 0 ? null : { fields, rest };
}

/** Parses a mark mask such as `0x00004000` or `16384`. */
function mask(text: string): number {
  return Number(text);
}

/** One fixed-form expression: its pattern and what it reads as. */
type Fixed = readonly [RegExp, (m: RegExpExecArray) => NftExpr | null];

const FIXED: readonly Fixed[] = [
  [/^comment "[^"]*"/, () => null],
  [/^ct state new\b/, () => ({ kind: "ctStateNew" })],
  [/^ct status dnat\b/, () => ({ kind: "ctStatusDnat" })],
  [/^fib (saddr|daddr) type local\b/, (m) => ({
    kind: "fibLocal",
    field: m[1] as "saddr" | "daddr",
  })],
  [/^iifname (!= )?"([^"]*)"/, (m) => ({
    kind: "iifname",
    negate: m[1] !== undefined,
    pattern: m[2]!,
  })],
  [/^(?:meta )?mark (?:and|&) (0x[0-9a-f]+|\d+) == (?:0x0+|0)(?=\s|$)/, (m) => ({
    kind: "markClear",
    mask: mask(m[1]!),
  })],
  [/^(?:meta )?mark set (?:meta )?mark (?:or|\|) (0x[0-9a-f]+|\d+)/, (m) => ({
    kind: "markOr",
    mask: mask(m[1]!),
  })],
  [/^(?:meta )?mark set (?:meta )?mark (?:xor|\^) (0x[0-9a-f]+|\d+)/, (m) => ({
    kind: "markXor",
    mask: mask(m[1]!),
  })],
  [
    /^jhash ((?:ip6? saddr|(?:th|tcp|udp|sctp) sport)(?: \. (?:ip6? saddr|(?:th|tcp|udp|sctp) sport))*) mod (\d+) seed (0x[0-9a-f]+|\d+) (?:== )?(\d+)/,
    (m) => ({
      kind: "jhash",
      // Printed back as `tcp sport`, written as `th sport`: the same hash either way.
      hash: `${m[1]!.replace(/\b(?:tcp|udp|sctp) sport/g, "th sport")} mod ${m[2]} seed ${
        Number(m[3])
      }`,
      mod: Number(m[2]),
      value: Number(m[4]),
    }),
  ],
  [/^update @(\S+) \{ ip6? saddr \}/, (m) => ({ kind: "updateSet", set: m[1]! })],
  [/^dnat (?:ip6? )?to (?:\[([0-9a-fA-F:.]+)\]|(\d+\.\d+\.\d+\.\d+)):(\d+)(?=\s|$)/, (m) => ({
    kind: "dnatTo",
    ip: m[1] ?? m[2]!,
    port: Number(m[3]),
  })],
  [/^masquerade(?: fully-random)?(?=\s|$)/, () => ({ kind: "masquerade" })],
  [/^(jump|goto) (\S+)/, (m) => ({ kind: m[1] as "jump" | "goto", chain: m[2]! })],
  [/^(return|accept|drop)(?=\s|$)/, (m) => ({ kind: m[1] as "return" | "accept" | "drop" })],
  [/^reject(?: with icmpx? (?:type )?port-unreachable)?(?=\s|$)/, () => ({ kind: "reject" })],
];

/** A value a field is compared with: an address, CIDR, address range, protocol or number. */
const VALUE = /^(?:[0-9a-fA-F:.]+(?:\/\d+)?|[a-z]+)(?=\s|$)/;

/** An anonymous set of plain values, `{ 172.30.0.0/16, 10.96.0.0/12 }`. */
const ANON_SET = /^\{ ([^{}@]+) \}/;

/** `dnat [ip|ip6] [addr . port] to FIELDS . numgen random mod N [offset K] map @MAP`. */
function readDnatMap(text: string): { expr: NftExpr; rest: string } | null {
  const head = /^dnat (?:ip6? )?(?:addr \. port )?to /.exec(text);
  if (head === null) return null;
  const f = readFields(text.slice(head[0].length));
  if (f === null) return null;
  const m = /^\. numgen random mod (\d+)(?: offset (\d+))? map @(\S+)/.exec(f.rest);
  if (m === null) return null;
  return {
    expr: {
      kind: "dnatMap",
      fields: f.fields,
      mod: Number(m[1]),
      offset: Number(m[2] ?? 0),
      map: m[3]!,
    },
    rest: f.rest.slice(m[0].length),
  };
}

/** Reads a field expression: a comparison, a set lookup or a verdict-map lookup. */
function readFieldExpr(text: string): { expr: NftExpr; rest: string } | null {
  const f = readFields(text);
  if (f === null) return null;
  let rest = f.rest;
  const vmap = /^vmap @(\S+)/.exec(rest);
  if (vmap !== null) {
    return {
      expr: { kind: "vmap", fields: f.fields, map: vmap[1]! },
      rest: rest.slice(vmap[0].length),
    };
  }
  let negate = false;
  if (rest.startsWith("!= ")) {
    negate = true;
    rest = rest.slice(3);
  } else if (rest.startsWith("== ")) {
    rest = rest.slice(3);
  }
  const set = /^@(\S+)/.exec(rest);
  if (set !== null) {
    return {
      expr: { kind: "inSet", fields: f.fields, negate, set: set[1]! },
      rest: rest.slice(set[0].length),
    };
  }
  const anon = ANON_SET.exec(rest);
  if (anon !== null && f.fields.length === 1) {
    const values = anon[1]!.split(",").map((v) => v.trim());
    if (!values.every((v) => VALUE.test(v))) return null;
    return {
      expr: { kind: "compareAny", field: f.fields[0]!, negate, values },
      rest: rest.slice(anon[0].length),
    };
  }
  const value = VALUE.exec(rest);
  if (value === null || f.fields.length !== 1) return null;
  return {
    expr: { kind: "compare", field: f.fields[0]!, negate, value: value[0] },
    rest: rest.slice(value[0].length),
  };
}

/**
 * The expressions of one rule, in order. Throws naming the first piece of text that is not an
 * expression nftables mode writes.
 */
export function parseNftRule(rule: string): NftExpr[] {
  const out: NftExpr[] = [];
  let rest = rule.trim();
  while (rest !== "") {
    let read: { expr: NftExpr | null; rest: string } | null = null;
    for (const [re, make] of FIXED) {
      const m = re.exec(rest);
      if (m !== null) {
        read = { expr: make(m), rest: rest.slice(m[0].length) };
        break;
      }
    }
    read ??= readDnatMap(rest) ?? readFieldExpr(rest);
    if (read === null) {
      throw new SyntaxError(
        `Unknown nft expression "${rest.slice(0, 80)}" in rule "${rule.slice(0, 200)}"`,
      );
    }
    if (read.expr !== null) out.push(read.expr);
    rest = read.rest.trimStart();
  }
  return out;
}
