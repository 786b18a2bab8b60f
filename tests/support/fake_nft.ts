/**
 * A state-holding fake of `nft`, for tests that must not need root. It keeps tables and
 * understands the commands nftables mode writes, one per line:
 * - `nft -f -` / `nft --check -f -` with `add|delete table`, `add|flush|delete chain`,
 *   `add rule`, `add|flush|delete set|map`, `add|delete element … { … }`; a script applies
 *   atomically (any bad line and nothing changes), as one nft transaction does
 * - `nft list tables`, `nft list table <family> <name>` (a readable dump, not nft's format),
 *   `nft list chains [family]`, `nft list map|set <family> <table> <name>`, `nft list chain <family> <table> <chain>` (its rules), and one
 *   command given as arguments
 * Like the kernel, it refuses rules or verdicts naming missing chains or sets, deleting what
 * does not exist, deleting non-empty or referenced chains and referenced sets, a map element
 * whose key holds another value, and re-declaring a chain's hook or a set's type.
 */
import type { CommandInput, CommandOutput, CommandRunner } from "../../lib/exec/mod.ts";
import type {
  NftChain,
  NftHook,
  NftSet,
  NftTableModel,
} from "../../lib/backends/nftables/table_model.ts";

/** One set or map of the fake. */
export interface FakeNftSet {
  kind: "set" | "map";
  spec: string[];
  elements: Map<string, string>;
}

/** One table of the fake. */
export interface FakeNftTable {
  comment: string;
  chains: Map<string, { hook?: NftHook; rules: string[] }>;
  sets: Map<string, FakeNftSet>;
}

/** What the last applied script touched, to assert that a partial sync stays partial. */
export interface FakeNftTouched {
  readonly chains: Set<string>;
  readonly elements: Set<string>;
  readonly sets: Set<string>;
}

class NftError extends Error {}

function cloneTables(tables: Map<string, FakeNftTable>): Map<string, FakeNftTable> {
  const out = new Map<string, FakeNftTable>();
  for (const [k, t] of tables) {
    const chains = new Map<string, { hook?: NftHook; rules: string[] }>();
    for (const [n, c] of t.chains) chains.set(n, { ...c, rules: [...c.rules] });
    const sets = new Map<string, FakeNftSet>();
    for (const [n, s] of t.sets) {
      sets.set(n, { kind: s.kind, spec: [...s.spec], elements: new Map(s.elements) });
    }
    out.set(k, { comment: t.comment, chains, sets });
  }
  return out;
}

/** Splits on `sep` outside double quotes. */
function splitOutsideQuotes(text: string, sep: string): string[] {
  const out: string[] = [];
  let quoted = false;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') quoted = !quoted;
    else if (!quoted && text.startsWith(sep, i)) {
      out.push(text.slice(start, i));
      start = i + sep.length;
      i += sep.length - 1;
    }
  }
  out.push(text.slice(start));
  return out;
}

/** Splits an element text into key and rest (` comment "…"` and/or ` : value`). */
function splitElement(text: string): [string, string] {
  const t = text.trim();
  const at = [' comment "', " : "].map((s) => t.indexOf(s)).filter((i) => i >= 0);
  if (at.length === 0) return [t, ""];
  const i = Math.min(...at);
  return [t.slice(0, i), t.slice(i)];
}

function parseHook(body: string): NftHook {
  const m =
    /^\{ type (filter|nat) hook (prerouting|input|forward|output|postrouting) priority (-?\d+) ; \}$/
      .exec(body);
  if (!m) throw new NftError(`bad chain declaration "${body}"`);
  return { type: m[1] as NftHook["type"], hook: m[2] as NftHook["hook"], priority: Number(m[3]) };
}

/** Names of chains a rule or verdict jumps to, and of sets it looks up. */
function references(text: string): { chains: string[]; sets: string[] } {
  const chains = [...text.matchAll(/\b(?:goto|jump) ([^\s,;}]+)/g)].map((m) => m[1]!);
  const sets = [...text.matchAll(/@([^\s,;}]+)/g)].map((m) => m[1]!);
  return { chains, sets };
}

/** The fake `nft`: holds tables, applies scripts atomically, lists tables. */
export class FakeNft {
  tables = new Map<string, FakeNftTable>();
  /** Every script applied (or refused), in order. */
  readonly scripts: string[] = [];
  /** Refuse the next N `nft -f` scripts as if the kernel had (for failure tests). */
  failNext = 0;
  touched: FakeNftTouched = { chains: new Set(), elements: new Set(), sets: new Set() };

  /** Applies a script atomically; throws (and changes nothing) on the first bad line. */
  apply(script: string): void {
    const work = cloneTables(this.tables);
    const touched: FakeNftTouched = { chains: new Set(), elements: new Set(), sets: new Set() };
    const lines = script.split("\n");
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n]!.trim();
      if (line === "" || line.startsWith("#")) continue;
      try {
        this.#command(work, line, touched);
      } catch (err) {
        if (err instanceof NftError) {
          throw new NftError(`line ${n + 1}: ${err.message}: ${line.slice(0, 200)}`);
        }
        throw err;
      }
    }
    this.tables = work;
    this.touched = touched;
  }

  #table(work: Map<string, FakeNftTable>, family: string, name: string): FakeNftTable {
    const t = work.get(`${family} ${name}`);
    if (t === undefined) throw new NftError(`No such file or directory: table ${family} ${name}`);
    return t;
  }

  #checkRefs(t: FakeNftTable, text: string): void {
    const r = references(text);
    for (const c of r.chains) if (!t.chains.has(c)) throw new NftError(`no chain "${c}"`);
    for (const s of r.sets) if (!t.sets.has(s)) throw new NftError(`no set "${s}"`);
  }

  #referenced(t: FakeNftTable, what: "chains" | "sets", name: string): boolean {
    for (const c of t.chains.values()) {
      if (c.rules.some((r) => references(r)[what].includes(name))) return true;
    }
    if (what === "chains") {
      for (const s of t.sets.values()) {
        for (const rest of s.elements.values()) {
          if (references(rest).chains.includes(name)) return true;
        }
      }
    }
    return false;
  }

  #command(work: Map<string, FakeNftTable>, line: string, touched: FakeNftTouched): void {
    let m = /^(add|delete|flush) table (ip|ip6|inet) (\S+)(?: \{ comment "([^"]*)" ; \})?$/.exec(
      line,
    );
    if (m) {
      const key = `${m[2]} ${m[3]}`;
      if (m[1] === "add") {
        const t = work.get(key);
        if (t === undefined) {
          work.set(key, { comment: m[4] ?? "", chains: new Map(), sets: new Map() });
        } else if (m[4] !== undefined) t.comment = m[4];
      } else if (m[1] === "delete") {
        this.#table(work, m[2]!, m[3]!);
        work.delete(key);
      } else {
        for (const c of this.#table(work, m[2]!, m[3]!).chains.values()) c.rules = [];
      }
      return;
    }
    m = /^(add|flush|delete) chain (ip|ip6|inet) (\S+) (\S+)( \{.*\})?$/.exec(line);
    if (m) {
      const t = this.#table(work, m[2]!, m[3]!);
      const name = m[4]!;
      const c = t.chains.get(name);
      touched.chains.add(name);
      if (m[1] === "add") {
        const hook = m[5] === undefined ? undefined : parseHook(m[5].trim());
        if (c === undefined) {
          t.chains.set(name, hook === undefined ? { rules: [] } : { hook, rules: [] });
        } else if (hook !== undefined && JSON.stringify(c.hook) !== JSON.stringify(hook)) {
          throw new NftError(`chain "${name}" exists with another hook`);
        }
        return;
      }
      if (c === undefined) throw new NftError(`No such file or directory: chain "${name}"`);
      if (m[1] === "flush") c.rules = [];
      else {
        if (c.rules.length > 0) {
          throw new NftError(`Device or resource busy: chain "${name}" not empty`);
        }
        if (this.#referenced(t, "chains", name)) {
          throw new NftError(`Device or resource busy: chain "${name}" referenced`);
        }
        t.chains.delete(name);
      }
      return;
    }
    m = /^add rule (ip|ip6|inet) (\S+) (\S+) (.+)$/.exec(line);
    if (m) {
      const t = this.#table(work, m[1]!, m[2]!);
      const c = t.chains.get(m[3]!);
      if (c === undefined) throw new NftError(`No such file or directory: chain "${m[3]}"`);
      this.#checkRefs(t, m[4]!);
      c.rules.push(m[4]!);
      touched.chains.add(m[3]!);
      return;
    }
    m = /^(add|flush|delete) (set|map) (ip|ip6|inet) (\S+) (\S+)(?: \{ (.*) ; \})?$/.exec(line);
    if (m) {
      const t = this.#table(work, m[3]!, m[4]!);
      const name = m[5]!;
      const kind = m[2] as "set" | "map";
      const s = t.sets.get(name);
      touched.sets.add(name);
      if (m[1] === "add") {
        if (m[6] === undefined) throw new NftError(`set "${name}" needs a declaration`);
        const spec = m[6].split(" ; ");
        if (!spec[0]!.startsWith("type ") && !spec[0]!.startsWith("typeof ")) {
          throw new NftError(`set "${name}" has no type`);
        }
        if (kind === "map" !== spec[0]!.includes(" : ")) throw new NftError(`bad ${kind} type`);
        if (s === undefined) t.sets.set(name, { kind, spec, elements: new Map() });
        else if (s.kind !== kind || s.spec.join(";") !== spec.join(";")) {
          throw new NftError(`File exists: ${kind} "${name}" declared differently`);
        }
        return;
      }
      if (s === undefined || s.kind !== kind) {
        throw new NftError(`No such file or directory: ${kind} "${name}"`);
      }
      if (m[1] === "flush") s.elements.clear();
      else {
        if (this.#referenced(t, "sets", name)) {
          throw new NftError(`Device or resource busy: "${name}"`);
        }
        t.sets.delete(name);
      }
      return;
    }
    m = /^(add|delete) element (ip|ip6|inet) (\S+) (\S+) \{ (.*) \}$/.exec(line);
    if (m) {
      const t = this.#table(work, m[2]!, m[3]!);
      const s = t.sets.get(m[4]!);
      if (s === undefined) throw new NftError(`No such file or directory: set "${m[4]}"`);
      for (const text of splitOutsideQuotes(m[5]!, ", ")) {
        const [key, rest] = splitElement(text);
        if (key === "") throw new NftError("empty element");
        touched.elements.add(`${m[4]}\u0000${key}`);
        if (m[1] === "delete") {
          if (rest !== "") throw new NftError(`delete of element "${key}" with a value`);
          if (!s.elements.delete(key)) {
            throw new NftError(`No such file or directory: element "${key}" in "${m[4]}"`);
          }
          continue;
        }
        if ((s.kind === "map") !== rest.includes(" : ")) {
          throw new NftError(`element "${text}" does not fit ${s.kind} "${m[4]}"`);
        }
        this.#checkRefs(t, rest);
        const old = s.elements.get(key);
        if (old !== undefined && old.split(" : ")[1] !== rest.split(" : ")[1]) {
          throw new NftError(`File exists: element "${key}" in "${m[4]}"`);
        }
        s.elements.set(key, rest);
      }
      return;
    }
    throw new NftError("syntax error");
  }

  /** The table as a model, for comparison with what the renderer wanted. */
  model(family: "ip" | "ip6", name: string): NftTableModel | undefined {
    const t = this.tables.get(`${family} ${name}`);
    if (t === undefined) return undefined;
    const chains = new Map<string, NftChain>();
    for (const [n, c] of t.chains) {
      chains.set(
        n,
        c.hook === undefined
          ? { name: n, rules: c.rules }
          : { name: n, hook: c.hook, rules: c.rules },
      );
    }
    const sets = new Map<string, NftSet>();
    for (const [n, s] of t.sets) {
      sets.set(n, { name: n, kind: s.kind, spec: s.spec, elements: s.elements });
    }
    return { family, name, comment: t.comment, chains, sets };
  }

  /** A readable dump of one table (sorted, one object per line). */
  list(family: string, name: string): string {
    const t = this.tables.get(`${family} ${name}`);
    if (t === undefined) throw new NftError(`No such file or directory: table ${family} ${name}`);
    const out = [`table ${family} ${name} # ${t.comment}`];
    for (const [n, c] of t.chains) {
      out.push(
        `chain ${n} ${JSON.stringify(c.hook ?? null)}`,
        ...c.rules.map((r) => `  ${r}`),
      );
    }
    for (const [n, s] of t.sets) {
      out.push(
        `${s.kind} ${n} { ${s.spec.join(" ; ")} }`,
        ...[...s.elements].map(([k, v]) => `  ${k}${v}`),
      );
    }
    return out.join("\n") + "\n";
  }

  /** The CommandRunner over this fake (only `nft`; anything else is "command not found"). */
  runner(): CommandRunner {
    return (input: CommandInput): Promise<CommandOutput> => Promise.resolve(this.#run(input));
  }

  #run({ cmd, args, stdin }: CommandInput): CommandOutput {
    if (cmd !== "nft") return { code: 127, stdout: "", stderr: `${cmd}: command not found` };
    const a = args.join(" ");
    try {
      if (a === "-f -" || a === "--check -f -") {
        this.scripts.push(stdin ?? "");
        if (a === "-f -" && this.failNext > 0) {
          this.failNext--;
          return {
            code: 1,
            stdout: "",
            stderr: "Error: Could not process rule: injected failure\n",
          };
        }
        if (a === "--check -f -") {
          const saved = this.tables;
          this.apply(stdin ?? "");
          this.tables = saved;
        } else this.apply(stdin ?? "");
        return { code: 0, stdout: "", stderr: "" };
      }
      if (a === "list tables") {
        const lines = [...this.tables.keys()].map((k) => `table ${k}\n`).join("");
        return { code: 0, stdout: lines, stderr: "" };
      }
      const m = /^list table (\S+) (\S+)$/.exec(a);
      if (m) return { code: 0, stdout: this.list(m[1]!, m[2]!), stderr: "" };
      const fam = /^list chains(?: (\S+))?$/.exec(a);
      if (fam) {
        const out: string[] = [];
        for (const [k, t] of this.tables) {
          if (fam[1] !== undefined && !k.startsWith(`${fam[1]} `)) continue;
          out.push(
            `table ${k} {`,
            ...[...t.chains.keys()].flatMap((n) => [`\tchain ${n} {`, "\t}"]),
            "}",
          );
        }
        return { code: 0, stdout: out.join("\n") + "\n", stderr: "" };
      }
      const mp = /^list (map|set) (\S+) (\S+) (\S+)$/.exec(a);
      if (mp) {
        const set = this.tables.get(`${mp[2]} ${mp[3]}`)?.sets.get(mp[4]!);
        if (set === undefined) throw new NftError(`No such file or directory: ${mp[1]} ${mp[4]}`);
        const elements = [...set.elements].map(([k, v]) => `${k}${v}`).join(", ");
        const body = [`\t${mp[1]} ${mp[4]} {`, `\t\t${set.spec[0]}`];
        if (elements !== "") body.push(`\t\telements = { ${elements} }`);
        const text = [`table ${mp[2]} ${mp[3]} {`, ...body, "\t}", "}", ""].join("\n");
        return { code: 0, stdout: text, stderr: "" };
      }
      const c = /^list chain (\S+) (\S+) (\S+)$/.exec(a);
      if (c) {
        const chain = this.tables.get(`${c[1]} ${c[2]}`)?.chains.get(c[3]!);
        if (chain === undefined) throw new NftError(`No such file or directory: chain ${c[3]}`);
        return { code: 0, stdout: chain.rules.join("\n"), stderr: "" };
      }
      if (/^(add|delete|flush) /.test(a)) {
        this.apply(a);
        return { code: 0, stdout: "", stderr: "" };
      }
      return { code: 1, stdout: "", stderr: `Error: unsupported arguments "${a}"\n` };
    } catch (err) {
      if (err instanceof NftError) {
        return { code: 1, stdout: "", stderr: `Error: ${err.message}\n` };
      }
      throw err;
    }
  }
}
