/**
 * The iptables rules a walk follows: tables of chains of rules, read from `iptables-save`
 * output or from iptables-restore input as a renderer writes it (`-I` lines prepend, `-X`
 * deletes, `:CHAIN` declares and flushes). Pure.
 */
import type { IPFamily } from "../proxy/mod.ts";
import { restoreLines } from "./_save_parser.ts";

/** One rule: its table, chain and the text after `-A CHAIN` (split into words when compiled). */
export interface IptablesRule {
  readonly table: string;
  readonly chain: string;
  readonly spec: string;
}

/** The chains of one table, each an ordered list of rules. */
export type IptablesTable = Map<string, IptablesRule[]>;

/** The tables of one family. */
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

/** Parses iptables-save text or restore input (several may be concatenated) into tables. */
export function parseIptablesRules(text: string, family: IPFamily): IptablesRules {
  const tables = new Map<string, IptablesTable>();
  let current: IptablesTable | null = null;
  let tableName = "";
  for (const line of restoreLines(text)) {
    if (line.kind === "table") {
      tableName = line.name;
      current = tables.get(tableName) ?? new Map();
      tables.set(tableName, current);
    } else if (current === null) {
      continue;
    } else if (line.kind === "commit") {
      current = null;
    } else if (line.kind === "chain") {
      // A restore declaration flushes the chain, as iptables-restore --noflush does.
      current.set(line.name, []);
    } else if (line.op === "-X") {
      current.delete(line.chain);
    } else {
      const rule: IptablesRule = { table: tableName, chain: line.chain, spec: line.spec };
      const rules = current.get(line.chain) ?? [];
      current.set(line.chain, rules);
      if (line.op === "-A") rules.push(rule);
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
