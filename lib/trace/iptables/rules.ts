/**
 * The iptables rules a tracer walks: tables of chains of tokenized rules, read from
 * `iptables-save` output or from iptables-restore input as the renderer writes it (`-I` lines
 * prepend, `-X` deletes, `:CHAIN` declares). Pure.
 */
import type { IPFamily } from "../../proxy/mod.ts";

/** One rule: its chain, position and words (quoted words keep their quotes). */
export interface IptablesRule {
  readonly table: string;
  readonly chain: string;
  readonly words: readonly string[];
}

/** The chains of one table, each an ordered list of rules. */
export type IptablesTable = Map<string, IptablesRule[]>;

/** The nat and filter tables of one family. */
export interface IptablesRules {
  readonly family: IPFamily;
  readonly tables: ReadonlyMap<string, IptablesTable>;
}

/** The chains the kernel always has, which hold other software's rules too. */
export const BUILTIN_CHAINS: ReadonlySet<string> = new Set([
  "PREROUTING",
  "INPUT",
  "FORWARD",
  "OUTPUT",
  "POSTROUTING",
]);

/** One word of a rule: quoted parts (kept with their quotes) may not split it. */
const WORD = /(?:[^\s"]+|"(?:[^"\\]|\\.)*")+/g;

/** Splits a rule line into words as tokenizeRule does, with one regular expression (faster). */
export function ruleWords(line: string): string[] {
  return line.match(WORD) ?? [];
}

/** Parses iptables-save text or restore input (several may be concatenated) into tables. */
export function parseIptablesRules(text: string, family: IPFamily): IptablesRules {
  const tables = new Map<string, IptablesTable>();
  let current: IptablesTable | null = null;
  let tableName = "";
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    if (line.startsWith("*")) {
      tableName = line.slice(1);
      current = tables.get(tableName) ?? new Map();
      tables.set(tableName, current);
      continue;
    }
    if (current === null) continue;
    if (line === "COMMIT") {
      current = null;
      continue;
    }
    if (line.startsWith(":")) {
      const name = line.slice(1).split(/\s+/)[0] ?? "";
      // A restore declaration flushes the chain, as iptables-restore --noflush does.
      current.set(name, []);
      continue;
    }
    const words = ruleWords(line);
    const op = words[0];
    const chain = words[1] ?? "";
    if (op === "-X") {
      current.delete(chain);
    } else if (op === "-A" || op === "--append" || op === "-I" || op === "--insert") {
      const rule: IptablesRule = { table: tableName, chain, words: words.slice(2) };
      const rules = current.get(chain) ?? [];
      current.set(chain, rules);
      if (op === "-A" || op === "--append") rules.push(rule);
      else rules.unshift(rule);
    }
  }
  return { family, tables };
}

/** The rules of `chain` in `table`, or null when the chain does not exist. */
export function chainRules(
  rules: IptablesRules,
  table: string,
  chain: string,
): readonly IptablesRule[] | null {
  const t = rules.tables.get(table);
  const c = t?.get(chain);
  if (c !== undefined) return c;
  return BUILTIN_CHAINS.has(chain) ? [] : null;
}

/** `ns/name:port` from a rule comment such as `"ns/svc:http cluster IP"`, or "". */
export function commentServicePort(comment: string | null): string {
  if (comment === null) return "";
  const first = comment.replace(/^"|"$/g, "").split(" ")[0] ?? "";
  return first.includes("/") ? first : "";
}
