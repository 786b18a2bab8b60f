/**
 * Helpers for the nftables tests: a comparable text form of a table model, and the elements
 * of one set. IP plan as tests/backends/iptables/state_fixtures.ts.
 */
import type { NftTableModel } from "../../../lib/backends/nftables/table_model.ts";

/**
 * A canonical, sorted text of a model: equal texts mean equal tables. The elements of
 * `sync-stamp` are left out: the proxier writes them, the renderer's model never has them.
 */
export function modelText(m: NftTableModel | undefined): string {
  if (m === undefined) return "<no table>";
  const out = [`table ${m.family} ${m.name} "${m.comment}"`];
  for (const name of [...m.chains.keys()].sort()) {
    const c = m.chains.get(name)!;
    out.push(`chain ${name} ${JSON.stringify(c.hook ?? null)}`, ...c.rules.map((r) => `  ${r}`));
  }
  for (const name of [...m.sets.keys()].sort()) {
    const s = m.sets.get(name)!;
    out.push(`${s.kind} ${name} ${s.spec.join(" ; ")}`);
    if (name === "sync-stamp") continue;
    out.push(...[...s.elements].map(([k, v]) => `  ${k}${v}`).sort());
  }
  return out.join("\n");
}

/** The elements of `set` as `key rest` lines, sorted. */
export function elementsOf(m: NftTableModel, set: string): string[] {
  const s = m.sets.get(set);
  if (s === undefined) throw new Error(`No set "${set}"`);
  return [...s.elements].map(([k, v]) => `${k}${v}`).sort();
}

/** The rules of `chain`. */
export function rulesOf(m: NftTableModel, chain: string): readonly string[] {
  const c = m.chains.get(chain);
  if (c === undefined) throw new Error(`No chain "${chain}" (have ${[...m.chains.keys()]})`);
  return c.rules;
}
