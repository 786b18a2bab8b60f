/** Label and field selectors, parsed the way the real API server reads `?labelSelector=`. */

/** One requirement of a label selector. */
export type LabelRequirement =
  | { readonly op: "exists" | "!exists"; readonly key: string }
  | { readonly op: "=" | "!="; readonly key: string; readonly value: string }
  | { readonly op: "in" | "notin"; readonly key: string; readonly values: readonly string[] };

/** A parsed selector: every requirement must hold. */
export type Selector<R> = readonly R[];

/** A field requirement (`metadata.name=x`, `metadata.namespace!=y`). */
export interface FieldRequirement {
  readonly field: "metadata.name" | "metadata.namespace";
  readonly op: "=" | "!=";
  readonly value: string;
}

/** Splits on commas outside parentheses (`a in (x,y),b` has two terms). */
function splitTerms(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      out.push(cur);
      cur = "";
    } else cur += ch;
  }
  out.push(cur);
  return out.map((t) => t.trim()).filter((t) => t !== "");
}

const KEY =
  /^([a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?\/)?[a-z0-9A-Z]([-a-z0-9A-Z_.]*[a-z0-9A-Z])?$/;

function checkKey(key: string, term: string): string {
  if (!KEY.test(key)) {
    throw new Error(`Invalid label selector term "${term}": key "${key}" is not a label key`);
  }
  return key;
}

/** Parses `key`, `!key`, `key=v`, `key==v`, `key!=v`, `key in (a,b)`, `key notin (a,b)`. */
export function parseLabelSelector(text: string): Selector<LabelRequirement> {
  return splitTerms(text).map((term): LabelRequirement => {
    if (term.startsWith("!")) return { op: "!exists", key: checkKey(term.slice(1).trim(), term) };
    const set = /^(\S+)\s+(in|notin)\s*\((.*)\)$/.exec(term);
    if (set) {
      const values = (set[3] ?? "").split(",").map((v) => v.trim()).filter((v) => v !== "");
      return { op: set[2] as "in" | "notin", key: checkKey(set[1] ?? "", term), values };
    }
    const eq = /^([^=!\s]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (eq) {
      return {
        op: eq[2] === "!=" ? "!=" : "=",
        key: checkKey(eq[1] ?? "", term),
        value: eq[3] ?? "",
      };
    }
    return { op: "exists", key: checkKey(term, term) };
  });
}

/** True when `labels` satisfy every requirement. */
export function matchesLabels(
  selector: Selector<LabelRequirement>,
  labels: Readonly<Record<string, string>> | undefined,
): boolean {
  const l = labels ?? {};
  return selector.every((r) => {
    const has = Object.hasOwn(l, r.key);
    const v = l[r.key];
    switch (r.op) {
      case "exists":
        return has;
      case "!exists":
        return !has;
      case "=":
        return has && v === r.value;
      case "!=":
        return !has || v !== r.value;
      case "in":
        return has && r.values.includes(v ?? "");
      case "notin":
        return !has || !r.values.includes(v ?? "");
    }
  });
}

/** Parses `metadata.name=x,metadata.namespace!=y`; other fields are rejected like the real one. */
export function parseFieldSelector(text: string): Selector<FieldRequirement> {
  return splitTerms(text).map((term) => {
    const m = /^([^=!]+)(==|=|!=)(.*)$/.exec(term);
    const field = m?.[1]?.trim();
    if (!m || (field !== "metadata.name" && field !== "metadata.namespace")) {
      throw new Error(
        `Invalid field selector term "${term}": expected metadata.name or metadata.namespace ` +
          `with =, == or !=`,
      );
    }
    return { field, op: m[2] === "!=" ? "!=" : "=", value: (m[3] ?? "").trim() };
  });
}

/** True when the object's name/namespace satisfy every field requirement. */
export function matchesFields(
  selector: Selector<FieldRequirement>,
  meta: { readonly name?: string; readonly namespace?: string },
): boolean {
  return selector.every((r) => {
    const actual = (r.field === "metadata.name" ? meta.name : meta.namespace) ?? "";
    return r.op === "=" ? actual === r.value : actual !== r.value;
  });
}
