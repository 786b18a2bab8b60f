/**
 * Reads iptables-save output (and iptables-restore input): which chains exist in which table
 * and which rules they hold. Used to find stale chains, missing jump rules, leftovers to clean
 * up and flavour hints, and, as chains of rules, by the tracers. Pure.
 */

/** A chain as iptables-save declares it. */
export interface SavedChain {
  readonly name: string;
  /** `ACCEPT`/`DROP` for built-in chains, `-` for user chains. */
  readonly policy: string;
  readonly builtin: boolean;
}

/** One `-A CHAIN spec` line. */
export interface SavedRule {
  readonly chain: string;
  /** Everything after `-A CHAIN `, as printed. */
  readonly spec: string;
}

/** One `*table ... COMMIT` section. */
export interface SavedTable {
  readonly name: string;
  readonly chains: Map<string, SavedChain>;
  readonly rules: SavedRule[];
}

/** Name and policy of a `:CHAIN POLICY [packets:bytes]` header line (policy `-` if absent). */
export function chainHeader(line: string): { name: string; policy: string } {
  const space = headerSpace(line, 0, line.length);
  const name = line.slice(1, space);
  if (space >= line.length) return { name, policy: "-" };
  return { name, policy: line.slice(space + 1, headerSpace(line, space + 1, line.length)) };
}

/** The chain of an `-A CHAIN spec` line. */
export function ruleChain(line: string): string {
  const space = line.indexOf(" ", 3);
  return space === -1 ? line.slice(3) : line.slice(3, space);
}

/** One line of iptables-save output or iptables-restore input that says something. */
export type RestoreLine =
  | { readonly kind: "table"; readonly name: string }
  | { readonly kind: "commit" }
  | { readonly kind: "chain"; readonly name: string; readonly policy: string }
  | {
    readonly kind: "rule";
    /** `-A` appends, `-I` prepends, `-X` deletes the chain. */
    readonly op: "-A" | "-I" | "-X";
    readonly chain: string;
    /** Everything after `-A CHAIN `, as printed. */
    readonly spec: string;
  };

/** `-A CHAIN spec`, `-I CHAIN spec` or `-X CHAIN`, long forms too. */
const RULE_LINE = /^(-A|--append|-I|--insert|-X|--delete-chain)\s+(\S+)\s*(.*)$/;

const OPS: Readonly<Record<string, "-A" | "-I" | "-X">> = {
  "-A": "-A",
  "--append": "-A",
  "-I": "-I",
  "--insert": "-I",
  "-X": "-X",
  "--delete-chain": "-X",
};

/**
 * The lines of iptables-save output or restore input (several may be concatenated) that
 * declare a table, a chain or a rule, or end a table; blank lines, comments and anything else
 * are skipped. So are the chains whose names start with one of `skipPrefixes`: their `:NAME`
 * headers and `-A NAME` rules, as iptables-save prints them, are passed over in place, before
 * any of their text is copied or matched.
 */
export function* restoreLines(
  text: string,
  skipPrefixes: readonly string[] = [],
): Generator<RestoreLine> {
  for (let start = 0; start < text.length;) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    if (!skipped(text, start, skipPrefixes)) {
      const line = restoreLine(text.slice(start, end));
      if (line !== undefined) yield line;
    }
    start = end + 1;
  }
}

/**
 * Whether `line` is a `:NAME` header or `-A NAME` rule of a chain restoreLines passes over for
 * `skipPrefixes`: what a reader may drop as the lines come.
 */
export function isSkippedLine(line: string, skipPrefixes: readonly string[]): boolean {
  return skipped(line, 0, skipPrefixes);
}

/** Whether the line at `start` is a `:NAME` header or `-A NAME` rule of a skipped chain. */
function skipped(text: string, start: number, skipPrefixes: readonly string[]): boolean {
  if (skipPrefixes.length === 0) return false;
  const first = text.charCodeAt(start);
  const nameStart = first === COLON ? start + 1 : text.startsWith("-A ", start) ? start + 3 : -1;
  return nameStart !== -1 && skipPrefixes.some((p) => text.startsWith(p, nameStart));
}

/** One line of restoreLines(); undefined for a blank line, a comment or anything else. */
function restoreLine(raw: string): RestoreLine | undefined {
  const line = raw.trim();
  if (line === "" || line.startsWith("#")) return undefined;
  if (line.startsWith("*")) return { kind: "table", name: line.slice(1) };
  if (line === "COMMIT") return { kind: "commit" };
  if (line.startsWith(":")) return { kind: "chain", ...chainHeader(line) };
  const m = RULE_LINE.exec(line);
  return m === null ? undefined : { kind: "rule", op: OPS[m[1]!]!, chain: m[2]!, spec: m[3]! };
}

/**
 * Parses iptables-save text into tables keyed by name; unknown lines are ignored. With
 * `skipPrefixes`, the chains whose names start with one of them are left out, rules and all.
 */
export function parseIptablesSave(
  text: string,
  skipPrefixes: readonly string[] = [],
): Map<string, SavedTable> {
  const tables = new Map<string, SavedTable>();
  let current: SavedTable | null = null;
  for (const line of restoreLines(text, skipPrefixes)) {
    if (line.kind === "table") {
      current = tables.get(line.name) ?? { name: line.name, chains: new Map(), rules: [] };
      tables.set(line.name, current);
    } else if (current === null) {
      continue;
    } else if (line.kind === "commit") {
      current = null;
    } else if (line.kind === "chain") {
      const { name, policy } = line;
      current.chains.set(name, { name, policy, builtin: policy !== "-" });
    } else if (line.op === "-A") {
      current.rules.push({ chain: line.chain, spec: line.spec });
    }
  }
  return tables;
}

/**
 * One table's section of iptables-save output, keeping only what a full sync reads: the
 * built-in chains and their rules, and the user chains `keepChain` accepts (without rules).
 * With `listedTable`, the text is that table's `iptables -t <table> -S` listing instead: the
 * same chains and rules, headers written `-P NAME POLICY` and `-N NAME`, no `*table` or COMMIT.
 * Lines are walked in place, without splitting the text or parsing each header: at 10,000
 * services a nat table declares ~110,000 chains, of which a full sync keeps the stale ones.
 * Undefined when the text has no table section.
 */
export function scanSavedTable(
  text: string,
  keepChain: (name: string) => boolean,
  listedTable?: string,
): SavedTable | undefined {
  let table: SavedTable | undefined = listedTable === undefined
    ? undefined
    : { name: listedTable, chains: new Map(), rules: [] };
  for (let start = 0; start < text.length;) {
    let end = text.indexOf("\n", start);
    if (end === -1) end = text.length;
    const first = text.charCodeAt(start);
    const nameStart = headerNameStart(text, start);
    if (table === undefined) {
      if (first === STAR) {
        table = { name: text.slice(start + 1, end).trim(), chains: new Map(), rules: [] };
      }
    } else if (nameStart !== -1) {
      const space = headerSpace(text, nameStart, end);
      const name = text.slice(nameStart, space);
      if (isBuiltinChainHeader(text, start, space, end)) {
        const policy = text.slice(space + 1, headerSpace(text, space + 1, end));
        table.chains.set(name, { name, policy, builtin: true });
      } else if (keepChain(name)) {
        table.chains.set(name, { name, policy: "-", builtin: false });
      }
    } else if (text.startsWith("-A ", start)) {
      const line = text.slice(start, end).trimEnd();
      const chain = ruleChain(line);
      if (table.chains.get(chain)?.builtin) {
        table.rules.push({ chain, spec: line.slice(3 + chain.length + 1) });
      }
    } else if (text.startsWith("COMMIT", start)) {
      break;
    }
    start = end + 1;
  }
  return table;
}

const STAR = 42; // "*"
const COLON = 58; // ":"
const DASH = 45; // "-"
const UPPER_P = 80; // "P"

/** Where the chain name of the `:NAME POLICY [p:b]` header at start..end ends. */
function headerSpace(text: string, start: number, end: number): number {
  const space = text.indexOf(" ", start);
  return space === -1 || space > end ? end : space;
}

/**
 * Where the chain name of the header line at `start` begins: `:NAME POLICY [p:b]` of
 * iptables-save, `-P NAME POLICY` (built in) or `-N NAME` of `iptables -S`; -1 for other lines.
 */
function headerNameStart(text: string, start: number): number {
  if (text.charCodeAt(start) === COLON) return start + 1;
  return text.startsWith("-P ", start) || text.startsWith("-N ", start) ? start + 3 : -1;
}

/** True when the header line at `start` (its name ending at `space`) declares a built-in chain. */
function isBuiltinChainHeader(text: string, start: number, space: number, end: number): boolean {
  if (text.charCodeAt(start) === DASH) return text.charCodeAt(start + 1) === UPPER_P;
  return isBuiltinHeader(text, space, end);
}

/** True when a header's policy (after `space`) is not `-`, i.e. the chain is built in. */
function isBuiltinHeader(text: string, space: number, end: number): boolean {
  if (space >= end) return false;
  const next = space + 2;
  return !(text.charCodeAt(space + 1) === DASH && (next >= end || text.charCodeAt(next) === 32));
}

/**
 * A stop for reading one table's iptables-save output, or its `iptables -S` listing (see
 * CommandInput.stdoutUntil), once every chain header and every built-in chain's rules have
 * been read. Both print all headers, then each chain's rules in header order, so the first
 * rule of a chain declared after the last built-in one ends what a full sync needs (chain
 * names, jumps in built-in chains) without the rest, the bulk of a large table. Only the names
 * of user chains declared since the last built-in header are held, until the headers end.
 */
export function afterBuiltinRules(): (line: string) => boolean {
  /** Built-in chains and the user chains declared before one of them. */
  const beforeLastBuiltin = new Set<string>();
  let since: string[] = [];
  return (line) => {
    const nameStart = headerNameStart(line, 0);
    if (nameStart !== -1) {
      const space = headerSpace(line, nameStart, line.length);
      const name = line.slice(nameStart, space);
      if (isBuiltinChainHeader(line, 0, space, line.length)) {
        for (const c of since) beforeLastBuiltin.add(c);
        since = [];
        beforeLastBuiltin.add(name);
      } else {
        since.push(name);
      }
      return false;
    }
    if (!line.startsWith("-A ")) return false;
    since = [];
    return !beforeLastBuiltin.has(ruleChain(line));
  };
}
