/**
 * Follows one new connection through a `kube-proxy` table: the base chains of each hook in
 * priority order, jumps and gotos, verdict maps, set lookups, marks and NAT. Random choices
 * (`numgen random mod N`, `jhash … mod N`) fork the walk into N equally likely branches, so
 * the result is every way the packet can go, each with its probability. Pure.
 */
import { SERVICE_IPS, SERVICE_NODEPORTS } from "./_names.ts";
import { type NftSet, type NftTableModel } from "./table_model.ts";
import { canonicalIP, cidrContains, parseCIDR } from "../../net/mod.ts";
import type { TracePacket } from "../../trace/mod.ts";
import type { TraceNode } from "../../trace/mod.ts";
import { type NftExpr, type NftField, parseNftRule } from "./_trace_rule_parse.ts";

/** An element a lookup matched: its set, key and comment. */
export interface NftElementHit {
  readonly set: string;
  readonly key: string;
  readonly comment: string;
}

/** One way the packet goes, with its probability. */
export interface NftBranch {
  weight: number;
  /** Destination after any DNAT. */
  daddr: string;
  dport: number;
  dnat: { readonly ip: string; readonly port: number } | null;
  mark: number;
  /** Some mark bit was set before postrouting (not by the hairpin rule there). */
  markedEarly: boolean;
  masqueraded: boolean;
  inPostrouting: boolean;
  jhash: Map<string, number>;
  path: string[];
  affinitySeconds: number;
  /** The last verdict-map element and the last set element the packet matched. */
  lastVerdictElement: NftElementHit | null;
  lastSetElement: NftElementHit | null;
  /** Where a drop or reject happened. */
  stop: { readonly kind: "drop" | "reject"; readonly chain: string } | null;
  /** The service-ips / service-nodeports element that dispatched it. */
  dispatch: NftElementHit | null;
}

type End = "fallthrough" | "accept" | "drop" | "reject";
type Step = [NftBranch, "next" | End];

function fork(b: NftBranch, share: number): NftBranch {
  return {
    ...b,
    weight: b.weight * share,
    jhash: new Map(b.jhash),
    path: [...b.path],
  };
}

/** `comment "x y" : value` → { comment: "x y", value }. */
export function splitElementRest(rest: string): { comment: string; value: string } {
  const c = /comment "([^"]*)"/.exec(rest);
  const v = /(?:^|\s): (.*)$/.exec(rest);
  return { comment: c?.[1] ?? "", value: v?.[1]?.trim() ?? "" };
}

function sameIP(a: string, b: string): boolean {
  const ca = canonicalIP(a);
  return ca !== null && ca === canonicalIP(b);
}

/** Whether one element component (address, CIDR, range, word, number) covers `value`. */
function componentCovers(component: string, value: string): boolean {
  if (component === value) return true;
  if (component.includes("/")) {
    const c = parseCIDR(component);
    return c !== null && cidrContains(c, value);
  }
  const range = /^([0-9a-fA-F:.]+)-([0-9a-fA-F:.]+)$/.exec(component);
  if (range !== null && canonicalIP(value) !== null) {
    return ipCompare(range[1]!, value) <= 0 && ipCompare(value, range[2]!) <= 0;
  }
  return canonicalIP(value) !== null && sameIP(component, value);
}

function ipBytes(ip: string): number[] {
  const c = parseCIDR(`${ip}/${ip.includes(":") ? 128 : 32}`);
  return c === null ? [] : [...c.bytes];
}

function ipCompare(a: string, b: string): number {
  const x = ipBytes(a);
  const y = ipBytes(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    if ((x[i] ?? 0) !== (y[i] ?? 0)) return (x[i] ?? 0) - (y[i] ?? 0);
  }
  return 0;
}

/** The element of `set` whose key covers `values`, or null. */
export function lookupElement(set: NftSet, values: readonly string[]): [string, string] | null {
  const direct = values.map((v) => canonicalIP(v) ?? v).join(" . ");
  const rest = set.elements.get(direct);
  if (rest !== undefined) return [direct, rest];
  // Only interval sets hold keys (CIDRs, ranges) that an exact lookup cannot find.
  if (!set.spec.some((s) => /^flags .*\binterval\b/.test(s))) return null;
  for (const [key, r] of set.elements) {
    const parts = key.split(" . ");
    if (parts.length !== values.length) continue;
    if (parts.every((p, i) => componentCovers(p, values[i]!))) return [key, r];
  }
  return null;
}

/** The parsed rules of each table, by chain, shared by every walk through it. */
const parsedRules = new WeakMap<NftTableModel, Map<string, NftExpr[][]>>();

/** Walks one packet through one table. */
export class NftWalker {
  readonly #table: NftTableModel;
  readonly #packet: TracePacket;
  readonly #local: ReadonlySet<string>;
  readonly #rules: Map<string, NftExpr[][]>;

  constructor(table: NftTableModel, packet: TracePacket, node: TraceNode) {
    this.#table = table;
    this.#packet = packet;
    this.#local = new Set(node.localAddresses.map((a) => canonicalIP(a) ?? a));
    let rules = parsedRules.get(table);
    if (rules === undefined) parsedRules.set(table, rules = new Map());
    this.#rules = rules;
  }

  /** Whether `ip` is one of the node's addresses. */
  isLocal(ip: string): boolean {
    return this.#local.has(canonicalIP(ip) ?? ip);
  }

  /** A fresh branch for the packet. */
  start(): NftBranch {
    return {
      weight: 1,
      daddr: this.#packet.to,
      dport: this.#packet.port,
      dnat: null,
      mark: 0,
      markedEarly: false,
      masqueraded: false,
      inPostrouting: false,
      jhash: new Map(),
      path: [],
      affinitySeconds: 0,
      lastVerdictElement: null,
      lastSetElement: null,
      stop: null,
      dispatch: null,
    };
  }

  /**
   * Runs the base chains of `hook`, in priority order; drop and reject end a branch. `filterOnly`
   * skips nat chains (a connection's NAT is set up once, at its first hook).
   */
  runHook(hook: string, branches: readonly NftBranch[], filterOnly = false): NftBranch[] {
    const bases = [...this.#table.chains.values()]
      .filter((c) => c.hook?.hook === hook && !(filterOnly && c.hook.type === "nat"))
      .sort((a, b) => a.hook!.priority - b.hook!.priority);
    let live = [...branches];
    for (const base of bases) {
      const next: NftBranch[] = [];
      for (const b of live) {
        if (b.stop !== null) {
          next.push(b);
          continue;
        }
        if (hook === "postrouting" && !b.inPostrouting) {
          b.inPostrouting = true;
          b.markedEarly = b.mark !== 0;
        }
        for (const [out] of this.#runChain(base.name, b)) next.push(out);
      }
      live = next;
    }
    return live;
  }

  #parsed(chain: string): NftExpr[][] {
    let rules = this.#rules.get(chain);
    if (rules === undefined) {
      const c = this.#table.chains.get(chain);
      if (c === undefined) throw new RangeError(`Chain "${chain}" is not in the table`);
      rules = c.rules.map(parseNftRule);
      this.#rules.set(chain, rules);
    }
    return rules;
  }

  #runChain(chain: string, b: NftBranch): Array<[NftBranch, End]> {
    b.path.push(chain);
    return this.#runRules(chain, this.#parsed(chain), 0, b);
  }

  #runRules(
    chain: string,
    rules: NftExpr[][],
    i: number,
    b: NftBranch,
  ): Array<[NftBranch, End]> {
    if (i >= rules.length) return [[b, "fallthrough"]];
    const out: Array<[NftBranch, End]> = [];
    for (const [nb, r] of this.#runExprs(chain, rules[i]!, 0, b)) {
      if (r === "next") out.push(...this.#runRules(chain, rules, i + 1, nb));
      else out.push([nb, r]);
    }
    return out;
  }

  #fieldValue(field: NftField, b: NftBranch): string {
    switch (field) {
      case "saddr":
        return this.#packet.from;
      case "daddr":
        return b.daddr;
      case "l4proto":
        return this.#packet.protocol;
      case "dport":
        return String(b.dport);
      case "sport":
        throw new RangeError("The tracer does not know a packet's source port");
    }
  }

  #set(name: string): NftSet {
    const s = this.#table.sets.get(name);
    if (s === undefined) throw new RangeError(`Set "${name}" is not in the table`);
    return s;
  }

  #verdict(chain: string, value: string, exprs: NftExpr[], j: number, b: NftBranch): Step[] {
    const v = parseNftRule(value);
    return this.#runExprs(chain, [...v, ...exprs.slice(j + 1)], 0, b);
  }

  #runExprs(chain: string, exprs: NftExpr[], j: number, b: NftBranch): Step[] {
    if (j >= exprs.length) return [[b, "next"]];
    const e = exprs[j]!;
    const go = (ok: boolean): Step[] => ok ? this.#runExprs(chain, exprs, j + 1, b) : [[b, "next"]];
    switch (e.kind) {
      case "ctStateNew":
        return go(true);
      case "ctStatusDnat":
        return go(b.dnat !== null);
      case "fibLocal":
        return go(this.isLocal(e.field === "saddr" ? this.#packet.from : b.daddr));
      case "iifname":
        // Pod traffic arrives on a pod interface; node and external traffic on others.
        return go((this.#packet.source === "pod") !== e.negate);
      case "compare":
        return go(componentCovers(e.value, this.#fieldValue(e.field, b)) !== e.negate);
      case "compareAny": {
        const value = this.#fieldValue(e.field, b);
        return go(e.values.some((v) => componentCovers(v, value)) !== e.negate);
      }
      case "inSet": {
        const hit = lookupElement(this.#set(e.set), e.fields.map((f) => this.#fieldValue(f, b)));
        if (hit !== null && !e.negate) {
          b.lastSetElement = { set: e.set, key: hit[0], comment: splitElementRest(hit[1]).comment };
        }
        return go((hit !== null) !== e.negate);
      }
      case "markClear":
        return go((b.mark & e.mask) === 0);
      case "jhash": {
        const known = b.jhash.get(e.hash);
        if (known !== undefined) return go(known === e.value);
        const out: Step[] = [];
        for (let v = 0; v < e.mod; v++) {
          const nb = fork(b, 1 / e.mod);
          nb.jhash.set(e.hash, v);
          out.push(...this.#runExprs(chain, exprs, j, nb));
        }
        return out;
      }
      case "markOr":
      case "markXor":
        b.mark = e.kind === "markOr" ? b.mark | e.mask : b.mark ^ e.mask;
        return go(true);
      case "updateSet": {
        const timeout = this.#set(e.set).spec.find((s) => s.startsWith("timeout "));
        b.affinitySeconds = timeout === undefined ? 0 : parseNftDuration(timeout.slice(8));
        b.path.push(`${e.set}{${this.#packet.from}}`);
        return go(true);
      }
      case "vmap": {
        const map = this.#set(e.map);
        const hit = lookupElement(map, e.fields.map((f) => this.#fieldValue(f, b)));
        if (hit === null) return [[b, "next"]];
        const { comment, value } = splitElementRest(hit[1]);
        b.path.push(`${e.map}[${hit[0]}]`);
        b.lastVerdictElement = { set: e.map, key: hit[0], comment };
        if (e.map === SERVICE_IPS || e.map === SERVICE_NODEPORTS) b.dispatch = b.lastVerdictElement;
        return this.#verdict(chain, value, exprs, j, b);
      }
      case "dnatTo":
        b.dnat = { ip: e.ip, port: e.port };
        b.daddr = e.ip;
        b.dport = e.port;
        return [[b, "accept"]];
      case "dnatMap": {
        const map = this.#set(e.map);
        const key = e.fields.map((f) => this.#fieldValue(f, b));
        const out: Step[] = [];
        for (let k = 0; k < e.mod; k++) {
          const nb = fork(b, 1 / e.mod);
          const hit = lookupElement(map, [...key, String(e.offset + k)]);
          const m = hit === null ? null : /^(\S+) \. (\d+)$/.exec(splitElementRest(hit[1]).value);
          if (hit === null || m === null) {
            out.push([nb, "next"]);
            continue;
          }
          nb.path.push(`${e.map}[${hit[0]}]`);
          nb.dnat = { ip: m[1]!, port: Number(m[2]) };
          nb.daddr = m[1]!;
          nb.dport = Number(m[2]);
          out.push([nb, "accept"]);
        }
        return out;
      }
      case "masquerade":
        b.masqueraded = true;
        return [[b, "accept"]];
      case "jump":
      case "goto": {
        const out: Step[] = [];
        for (const [nb, end] of this.#runChain(e.chain, b)) {
          if (end !== "fallthrough") out.push([nb, end]);
          else if (e.kind === "goto") out.push([nb, "fallthrough"]);
          else out.push(...this.#runExprs(chain, exprs, j + 1, nb));
        }
        return out;
      }
      case "return":
        return [[b, "fallthrough"]];
      case "accept":
        return [[b, "accept"]];
      case "drop":
      case "reject":
        b.stop = { kind: e.kind, chain };
        return [[b, e.kind]];
    }
  }
}

/** `1m40s` / `100s` / `2h` → seconds. */
export function parseNftDuration(text: string): number {
  let total = 0;
  const units: Record<string, number> = { d: 86400, h: 3600, m: 60, s: 1 };
  for (const m of text.trim().matchAll(/(\d+)(ms|d|h|m|s)/g)) {
    if (m[2] !== "ms") total += Number(m[1]) * units[m[2]!]!;
  }
  return total;
}
