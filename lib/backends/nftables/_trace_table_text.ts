/**
 * Reads what `nft list table <family> kube-proxy` (nft 1.0.6) prints into the same
 * NftTableModel the renderer produces, so one evaluator follows packets through both. Rules
 * stay text (rule_parse.ts reads both spellings); set elements are split into key and rest as
 * the model holds them; dynamic-set bookkeeping (`timeout …`, `expires …`) is dropped from keys.
 * Pure.
 */
import {
  type NftChain,
  type NftFamily,
  type NftHook,
  type NftSet,
  type NftTableModel,
} from "./table_model.ts";

/** Named chain priorities as nft prints them (`dstnat - 10`). */
const PRIORITY_NAMES: Readonly<Record<string, number>> = {
  raw: -300,
  mangle: -150,
  dstnat: -100,
  filter: 0,
  security: 50,
  srcnat: 100,
};

/** `dstnat - 10` → -110; `-110` → -110. */
export function parsePriority(text: string): number {
  const m = /^(-?\d+|[a-z]+)(?:\s*([+-])\s*(\d+))?$/.exec(text.trim());
  if (m === null) throw new SyntaxError(`Unknown nft chain priority "${text}"`);
  const base = /^-?\d+$/.test(m[1]!) ? Number(m[1]) : PRIORITY_NAMES[m[1]!];
  if (base === undefined) throw new SyntaxError(`Unknown nft chain priority "${text}"`);
  const delta = m[3] === undefined ? 0 : Number(m[3]) * (m[2] === "-" ? -1 : 1);
  return base + delta;
}

/** Splits on `sep` outside double quotes and braces. */
function splitTopLevel(text: string, sep: string): string[] {
  const out: string[] = [];
  let quoted = false;
  let depth = 0;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (ch === '"') quoted = !quoted;
    else if (!quoted && ch === "{") depth++;
    else if (!quoted && ch === "}") depth--;
    else if (!quoted && depth === 0 && ch === sep) {
      out.push(text.slice(start, i));
      start = i + 1;
    }
  }
  out.push(text.slice(start));
  return out;
}

/** Splits one printed element into the model's key and rest (` comment "…"`, ` : value`). */
export function splitElementText(text: string): [string, string] {
  const t = text.replace(/\s+/g, " ").trim();
  const at = [' comment "', " : "].map((s) => t.indexOf(s)).filter((i) => i >= 0);
  const cut = at.length === 0 ? t.length : Math.min(...at);
  const key = t.slice(0, cut).replace(/ (?:timeout|expires) \S+/g, "");
  return [key, t.slice(cut)];
}

interface OpenSet {
  name: string;
  kind: "set" | "map";
  spec: string[];
  elements: Map<string, string>;
}

interface OpenChain {
  name: string;
  hook?: NftHook;
  rules: string[];
}

/** Adds the elements of one whole `elements = { … }` text to `set`. */
function addElements(set: OpenSet, text: string): void {
  const body = text.replace(/^elements = \{/, "").replace(/\}$/, "");
  for (const e of splitTopLevel(body, ",")) {
    if (e.trim() === "") continue;
    const [k, rest] = splitElementText(e);
    set.elements.set(k, rest);
  }
}

/** Parses the listing of one table. Throws on text that is not a table listing. */
export function parseNftTableListing(text: string): NftTableModel {
  const lines = text.split("\n");
  let family: NftFamily | null = null;
  let name = "";
  let comment = "";
  const chains = new Map<string, NftChain>();
  const sets = new Map<string, NftSet>();
  let chain: OpenChain | null = null;
  let set: OpenSet | null = null;
  let elements: string | null = null;
  for (const raw of lines) {
    const line = raw.trim();
    if (line === "") continue;
    if (elements !== null) {
      elements += " " + line;
      if (line.endsWith("}")) {
        addElements(set!, elements);
        elements = null;
      }
      continue;
    }
    const table = /^table (ip|ip6) (\S+) \{$/.exec(line);
    if (table !== null) {
      family = table[1] as NftFamily;
      name = table[2]!;
      continue;
    }
    const open = /^(set|map) (\S+) \{$/.exec(line);
    if (open !== null) {
      set = { name: open[2]!, kind: open[1] as "set" | "map", spec: [], elements: new Map() };
      continue;
    }
    const openChain = /^chain (\S+) \{$/.exec(line);
    if (openChain !== null) {
      chain = { name: openChain[1]!, rules: [] };
      continue;
    }
    if (line === "}") {
      if (set !== null) {
        sets.set(set.name, set);
        set = null;
      } else if (chain !== null) {
        chains.set(chain.name, chain);
        chain = null;
      }
      continue;
    }
    if (set !== null) {
      if (line.startsWith("elements = {")) {
        elements = line;
        if (line.endsWith("}")) {
          addElements(set, elements);
          elements = null;
        }
      } else set.spec.push(line);
      continue;
    }
    if (chain !== null) {
      const hook = /^type (filter|nat) hook (\w+) priority ([^;]+); policy \w+;$/.exec(line);
      if (hook !== null) {
        chain.hook = {
          type: hook[1] as NftHook["type"],
          hook: hook[2] as NftHook["hook"],
          priority: parsePriority(hook[3]!),
        };
      } else chain.rules.push(line);
      continue;
    }
    const c = /^comment "(.*)"$/.exec(line);
    if (c !== null) comment = c[1]!;
  }
  if (family === null) throw new SyntaxError('Not an nft table listing: no "table" line');
  return { family, name, comment, chains, sets };
}
