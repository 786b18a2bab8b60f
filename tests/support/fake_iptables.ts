/**
 * A state-holding fake of the iptables binaries, for tests that must not need root.
 * It keeps tables per flavour (legacy/nft) and family, and understands:
 * - `{ip,ip6}tables-{legacy,nft}-save [-t table]`
 * - `{ip,ip6}tables-{legacy,nft}-restore [--noflush] ...` with `*table`, `:CHAIN`, `-N`, `-A`,
 *   `-I`, `-D`, `-F`, `-X`, `COMMIT`; each table commits atomically, a bad line aborts it
 * - `{ip,ip6}tables-{legacy,nft} [-w N] [-W N] [-t table] -S|-L|-N|-A|-I|-D|-F|-X ...`
 * Like the real thing, it refuses jumps to missing chains and deleting referenced, non-empty,
 * missing or built-in chains.
 */
import {
  type CommandInput,
  type CommandOutput,
  type CommandRunner,
  withStdinText,
} from "../../lib/exec/mod.ts";

/** One chain: built-in chains have a policy, user chains have "-". */
export interface FakeChain {
  policy: string;
  rules: string[];
}

/** One table: chains in creation order. */
export type FakeTable = Map<string, FakeChain>;

const BUILTIN_CHAINS: Readonly<Record<string, readonly string[]>> = {
  filter: ["INPUT", "FORWARD", "OUTPUT"],
  nat: ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
  mangle: ["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"],
  raw: ["PREROUTING", "OUTPUT"],
};

const STANDARD_TARGETS = new Set([
  "ACCEPT",
  "DROP",
  "RETURN",
  "REJECT",
  "MARK",
  "MASQUERADE",
  "DNAT",
  "SNAT",
  "LOG",
  "CT",
  "CONNMARK",
  "REDIRECT",
  "NOTRACK",
  "TPROXY",
  "NFQUEUE",
  "QUEUE",
]);

const BINARY = /^(ip6?tables)-(legacy|nft)(-save|-restore)?$/;

/** Options for createFakeIptables. */
export interface FakeIptablesOptions {
  /** Flavours whose binaries are "not installed" (exit 127). */
  readonly missing?: readonly ("legacy" | "nft")[];
}

/** The fake: a CommandRunner plus handles to inspect and perturb its state. */
export interface FakeIptables {
  readonly run: CommandRunner;
  /** Every command run, for the thin layer that cares about argument spelling. */
  readonly calls: CommandInput[];
  /** The table's state, creating the table (with built-in chains) if needed. */
  table(flavour: string, family: "IPv4" | "IPv6", table: string): FakeTable;
  /** iptables-save text of one table, or of all existing tables. */
  save(flavour: string, family: "IPv4" | "IPv6", table?: string): string;
  /** The legacy tables that exist, as /proc/self/net/ip_tables_names lists them (newest first). */
  legacyTables(family: "IPv4" | "IPv6"): readonly string[];
  /** Makes the next restore fail with exit code 1 and leave every table unchanged. */
  failNextRestore(stderr?: string): void;
  /** Runs restore text directly (to seed state); throws on failure. */
  restore(flavour: string, family: "IPv4" | "IPv6", text: string): void;
}

class LineError extends Error {}

/** What the real runner returns of `text` as a command's stdout, given stdoutKeep/stdoutUntil. */
export function linesAsRead(text: string, input: CommandInput): string {
  const { stdoutKeep: keep, stdoutUntil: until } = input;
  if (keep === undefined && until === undefined) return text;
  let out = "";
  for (const piece of text.split(/(?<=\n)/)) {
    const line = piece.endsWith("\n") ? piece.slice(0, -1) : piece;
    if (keep === undefined || keep(line)) out += piece;
    if (until?.(line) === true) break;
  }
  return out;
}

function tokenize(text: string): string[] {
  const words: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  for (const m of text.matchAll(re)) words.push(m[1] !== undefined ? `"${m[1]}"` : m[2]!);
  return words;
}

function targetOf(words: readonly string[]): string | null {
  for (let i = 0; i < words.length - 1; i++) {
    if (words[i] === "-j" || words[i] === "-g") return words[i + 1]!;
  }
  return null;
}

function newTable(name: string): FakeTable {
  const t: FakeTable = new Map();
  for (const c of BUILTIN_CHAINS[name] ?? []) t.set(c, { policy: "ACCEPT", rules: [] });
  return t;
}

function cloneTable(t: FakeTable): FakeTable {
  return new Map([...t].map(([k, v]) => [k, { policy: v.policy, rules: [...v.rules] }]));
}

function chainOf(t: FakeTable, name: string | undefined): FakeChain {
  const c = name === undefined ? undefined : t.get(name);
  if (c === undefined) throw new LineError(`No chain/target/match by that name: "${name}"`);
  return c;
}

/** Applies one command (`-A CHAIN spec`, ...) to a table; throws LineError when iptables would. */
function applyCommand(t: FakeTable, words: readonly string[]): string {
  const [op, chain, ...rest] = words;
  const checkTarget = (spec: readonly string[]) => {
    const target = targetOf(spec);
    if (target !== null && !STANDARD_TARGETS.has(target) && !t.has(target)) {
      throw new LineError(`Couldn't load target "${target}"`);
    }
  };
  switch (op) {
    case "-A":
      checkTarget(rest);
      chainOf(t, chain).rules.push(rest.join(" "));
      return "";
    case "-I": {
      const c = chainOf(t, chain);
      let pos = 1;
      let spec = rest;
      if (rest[0] !== undefined && /^\d+$/.test(rest[0])) {
        pos = Number(rest[0]);
        spec = rest.slice(1);
      }
      checkTarget(spec);
      if (pos < 1 || pos > c.rules.length + 1) throw new LineError("Index of insertion too big");
      c.rules.splice(pos - 1, 0, spec.join(" "));
      return "";
    }
    case "-D": {
      const c = chainOf(t, chain);
      const i = rest.length === 1 && /^\d+$/.test(rest[0]!)
        ? Number(rest[0]) - 1
        : c.rules.indexOf(rest.join(" "));
      if (i < 0 || i >= c.rules.length) {
        throw new LineError("Bad rule (does a matching rule exist in that chain?)");
      }
      c.rules.splice(i, 1);
      return "";
    }
    case "-N":
      if (chain === undefined || t.has(chain)) throw new LineError("Chain already exists");
      t.set(chain, { policy: "-", rules: [] });
      return "";
    case "-F":
      if (chain === undefined) { for (const c of t.values()) c.rules = []; }
      else chainOf(t, chain).rules = [];
      return "";
    case "-X": {
      const names = chain === undefined
        ? [...t].filter(([, c]) => c.policy === "-").map(([n]) => n)
        : [chain];
      for (const name of names) {
        const c = chainOf(t, name);
        if (c.policy !== "-") throw new LineError(`Cannot delete built-in chain "${name}"`);
        if (c.rules.length > 0) throw new LineError(`Directory not empty: "${name}"`);
        for (const other of t.values()) {
          if (other.rules.some((r) => targetOf(tokenize(r)) === name)) {
            throw new LineError(`Too many links: "${name}" is referenced`);
          }
        }
        t.delete(name);
      }
      return "";
    }
    case "-S":
    case "-L": {
      // As iptables prints them: every chain's header first, then every chain's rules.
      const entries = chain === undefined ? [...t] : [[chain, chainOf(t, chain)] as const];
      return [
        ...entries.map(([name, c]) => c.policy === "-" ? `-N ${name}` : `-P ${name} ${c.policy}`),
        ...entries.flatMap(([name, c]) => c.rules.map((r) => `-A ${name} ${r}`)),
      ].map((line) => `${line}\n`).join("");
    }
    default:
      throw new LineError(`Unknown command "${op}"`);
  }
}

/** Creates an empty fake (no tables until something touches them). */
export function createFakeIptables(options: FakeIptablesOptions = {}): FakeIptables {
  const state = new Map<string, Map<string, FakeTable>>();
  const calls: CommandInput[] = [];
  let pendingFailure: string | null = null;

  const tables = (flavour: string, family: string) => {
    const k = `${flavour}/${family}`;
    let m = state.get(k);
    if (!m) state.set(k, m = new Map());
    return m;
  };
  const table = (flavour: string, family: string, name: string): FakeTable => {
    const m = tables(flavour, family);
    let t = m.get(name);
    if (!t) m.set(name, t = newTable(name));
    return t;
  };

  const saveTable = (name: string, t: FakeTable) => {
    const lines = [`*${name}`];
    for (const [c, chain] of t) lines.push(`:${c} ${chain.policy} [0:0]`);
    for (const [c, chain] of t) for (const r of chain.rules) lines.push(`-A ${c} ${r}`);
    lines.push("COMMIT");
    return lines.join("\n") + "\n";
  };
  const save = (flavour: string, family: string, name?: string): string => {
    if (name !== undefined) return saveTable(name, table(flavour, family, name));
    // The legacy kernel lists its tables newest first, as /proc/net/ip_tables_names does.
    const all = [...tables(flavour, family)];
    if (flavour === "legacy") all.reverse();
    return all.map(([n, t]) => saveTable(n, t)).join("");
  };

  const restore = (
    flavour: string,
    family: string,
    text: string,
    noflush: boolean,
  ): CommandOutput => {
    let name: string | null = null;
    let work: FakeTable | null = null;
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
      const line = lines[i]!.trim();
      const fail = (msg: string): CommandOutput => ({
        code: 1,
        stdout: "",
        stderr: `iptables-restore: line ${i + 1} failed: ${msg}\n`,
      });
      if (line === "" || line.startsWith("#")) continue;
      if (line.startsWith("*")) {
        name = line.slice(1);
        work = cloneTable(table(flavour, family, name));
        if (!noflush) {
          for (const [c, chain] of [...work]) {
            chain.rules = [];
            if (chain.policy === "-") work.delete(c);
          }
        }
        continue;
      }
      if (work === null || name === null) return fail("no table selected");
      if (line === "COMMIT") {
        tables(flavour, family).set(name, work);
        work = null;
        continue;
      }
      try {
        if (line.startsWith(":")) {
          const [chain = "", policy = "-"] = line.slice(1).split(/\s+/);
          const existing = work.get(chain);
          if (existing && existing.policy !== "-") {
            if (policy !== "-") existing.policy = policy;
          } else if (existing) existing.rules = [];
          else if (policy !== "-") throw new LineError(`Unknown built-in chain "${chain}"`);
          else work.set(chain, { policy: "-", rules: [] });
        } else {
          applyCommand(work, tokenize(line));
        }
      } catch (err) {
        if (err instanceof LineError) return fail(err.message);
        throw err;
      }
    }
    if (work !== null) {
      return { code: 1, stdout: "", stderr: "iptables-restore: COMMIT expected\n" };
    }
    return { code: 0, stdout: "", stderr: "" };
  };

  const run: CommandRunner = async (given) => {
    const input = await withStdinText(given);
    calls.push(input);
    const m = BINARY.exec(input.cmd);
    if (!m || options.missing?.includes(m[2] as "legacy" | "nft")) {
      return Promise.resolve({ code: 127, stdout: "", stderr: `${input.cmd}: command not found` });
    }
    const family = m[1] === "ip6tables" ? "IPv6" : "IPv4";
    const flavour = m[2]!;
    const args = [...input.args];
    const tIndex = args.indexOf("-t");
    const tableName = tIndex === -1 ? undefined : args[tIndex + 1];
    if (m[3] === "-save") {
      const stdout = linesAsRead(save(flavour, family, tableName), given);
      return Promise.resolve({ code: 0, stdout, stderr: "" });
    }
    if (m[3] === "-restore") {
      if (pendingFailure !== null) {
        const stderr = pendingFailure;
        pendingFailure = null;
        return Promise.resolve({ code: 1, stdout: "", stderr });
      }
      return Promise.resolve(
        restore(flavour, family, input.stdin ?? "", args.includes("--noflush")),
      );
    }
    // Single command: drop -w/-W and -t, keep the operation.
    const rest: string[] = [];
    for (let i = 0; i < args.length; i++) {
      if (args[i] === "-w" || args[i] === "-W" || args[i] === "-t") {
        if (args[i + 1] !== undefined && !args[i + 1]!.startsWith("-")) i++;
        continue;
      }
      rest.push(args[i]!);
    }
    try {
      const stdout = applyCommand(table(flavour, family, tableName ?? "filter"), rest);
      return Promise.resolve({ code: 0, stdout, stderr: "" });
    } catch (err) {
      if (err instanceof LineError) {
        return Promise.resolve({ code: 1, stdout: "", stderr: `iptables: ${err.message}.\n` });
      }
      throw err;
    }
  };

  return {
    run,
    calls,
    table,
    save,
    legacyTables: (family) => [...tables("legacy", family).keys()].reverse(),
    failNextRestore: (stderr = "iptables-restore: line 3 failed\n") => {
      pendingFailure = stderr;
    },
    restore: (flavour, family, text) => {
      const out = restore(flavour, family, text, true);
      if (out.code !== 0) throw new Error(`Fake restore failed: ${out.stderr.trim()}`);
    },
  };
}
