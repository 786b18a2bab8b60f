/**
 * Turns one iptables rule into matches and a target a walk can evaluate. Only the matches
 * the iptables and IPVS modes write are understood; anything else is an error naming it,
 * never a guess. Pure.
 */
import { type CIDR, parseCIDR } from "../net/mod.ts";
import type { IptablesRule } from "./_rule_set.ts";
import { ruleWords, unquoteWord } from "./_tokenize.ts";

/** A rule uses something the tracer does not evaluate. */
export class UnknownMatchError extends Error {
  /** `what` names the option or module; `rule` is the rule's text. */
  constructor(readonly what: string, readonly rule: string) {
    super(`Cannot trace through rule "${rule}": unknown ${what}`);
    this.name = "UnknownMatchError";
  }
}

/** One condition of a rule. */
export type Match =
  | { readonly k: "src" | "dst"; readonly cidr: CIDR; readonly neg: boolean }
  | { readonly k: "proto"; readonly proto: string; readonly neg: boolean }
  | { readonly k: "dport"; readonly port: number; readonly neg: boolean }
  | { readonly k: "addrtype"; readonly side: "src" | "dst"; readonly neg: boolean }
  | { readonly k: "statistic"; readonly probability: number }
  | { readonly k: "recent-check"; readonly seconds: number }
  | { readonly k: "mark"; readonly value: number; readonly mask: number; readonly neg: boolean }
  | { readonly k: "ctstate"; readonly states: readonly string[]; readonly neg: boolean }
  | { readonly k: "in-iface"; readonly name: string; readonly neg: boolean }
  /** `--physdev-is-in`: the packet came in through a bridge port. */
  | { readonly k: "physdev-in"; readonly neg: boolean }
  /** `-m set --match-set NAME FLAGS`. */
  | { readonly k: "set"; readonly name: string; readonly flags: string; readonly neg: boolean }
  /** `-m ipvs --vaddr/--vproto/--vport`: the virtual server IPVS chose. */
  | { readonly k: "vaddr"; readonly cidr: CIDR; readonly neg: boolean }
  | { readonly k: "vproto"; readonly proto: string; readonly neg: boolean }
  | { readonly k: "vport"; readonly port: number; readonly neg: boolean };

/** A rule's action. `kind` "none" is a rule without target (it only counts packets). */
export interface Target {
  readonly name: string;
  readonly goto: boolean;
  /** DNAT destination `ip:port` / `[ip]:port`. */
  readonly toDestination?: string;
  /** MARK: new = (mark & ~mask) ^ xor | or. */
  readonly markMask?: number;
  readonly markXor?: number;
  readonly markOr?: number;
}

/** A compiled rule. */
export interface CompiledRule {
  readonly matches: readonly Match[];
  readonly target: Target | null;
  /** The `--comment` text without quotes, or null. */
  readonly comment: string | null;
  /** The `-m` modules the rule loads. */
  readonly modules: readonly string[];
  readonly text: string;
}

/** The match modules iptables mode writes (`nfacct` only counts: it matches every packet). */
export const IPTABLES_MODE_MODULES: ReadonlySet<string> = new Set([
  "tcp",
  "udp",
  "sctp",
  "comment",
  "addrtype",
  "statistic",
  "recent",
  "mark",
  "conntrack",
  "nfacct",
]);

/** The match modules IPVS mode writes besides the ones iptables mode writes too. */
const IPVS_ONLY_MODULES = ["set", "physdev", "ipvs"];

/** The match modules IPVS mode writes. */
export const IPVS_MODE_MODULES: ReadonlySet<string> = new Set([
  ...["tcp", "udp", "sctp", "comment", "addrtype", "mark", "conntrack"],
  ...IPVS_ONLY_MODULES,
]);

const MODULES = new Set([...IPTABLES_MODE_MODULES, ...IPVS_ONLY_MODULES]);

function parseNumber(w: string | undefined, rule: string, what: string): number {
  const n = w === undefined ? NaN : Number(w);
  if (!Number.isFinite(n)) throw new UnknownMatchError(`${what} value "${w ?? ""}"`, rule);
  return n;
}

function addressMatch(w: string | undefined, rule: string): CIDR {
  const text = w === undefined ? "" : w.includes("/") ? w : `${w}/${w.includes(":") ? 128 : 32}`;
  const c = parseCIDR(text);
  if (c === null) throw new UnknownMatchError(`address "${w ?? ""}"`, rule);
  return c;
}

function parseTarget(words: readonly string[], rule: string, goto: boolean): Target {
  const name = words[0] ?? "";
  const t: { -readonly [K in keyof Target]: Target[K] } = { name, goto };
  for (let i = 1; i < words.length; i++) {
    const w = words[i]!;
    const v = words[i + 1];
    switch (w) {
      case "--to-destination":
        t.toDestination = v ?? "";
        i++;
        break;
      case "--or-mark":
        t.markMask = 0, t.markXor = 0, t.markOr = parseNumber(v, rule, w);
        i++;
        break;
      case "--xor-mark":
        t.markMask = 0, t.markXor = parseNumber(v, rule, w), t.markOr = 0;
        i++;
        break;
      case "--set-xmark": {
        const [value = "", mask = "0xffffffff"] = (v ?? "").split("/");
        t.markMask = parseNumber(mask, rule, w);
        t.markXor = parseNumber(value, rule, w);
        t.markOr = 0;
        i++;
        break;
      }
      case "--reject-with":
        i++;
        break;
      case "--random-fully":
      case "--random":
        break;
      default:
        throw new UnknownMatchError(`target option "${w}" of ${name}`, rule);
    }
  }
  return t;
}

/** Compiles a rule; throws UnknownMatchError naming the first option it cannot evaluate. */
export function compileRule(rule: IptablesRule): CompiledRule {
  const words = ruleWords(rule.spec);
  const text = `-A ${rule.chain} ${rule.spec}`;
  const matches: Match[] = [];
  const modules: string[] = [];
  let comment: string | null = null;
  let target: Target | null = null;
  let neg = false;
  for (let i = 0; i < words.length; i++) {
    const w = words[i]!;
    const v = words[i + 1];
    if (w === "!") {
      neg = true;
      continue;
    }
    switch (w) {
      case "-s":
      case "--source":
      case "-d":
      case "--destination":
        matches.push({
          k: w.startsWith("-s") || w === "--source" ? "src" : "dst",
          cidr: addressMatch(v, text),
          neg,
        });
        i++;
        break;
      case "-p":
      case "--protocol":
        matches.push({ k: "proto", proto: (v ?? "").toLowerCase(), neg });
        i++;
        break;
      case "-i":
      case "--in-interface":
        matches.push({ k: "in-iface", name: v ?? "", neg });
        i++;
        break;
      case "-m":
      case "--match":
        if (!MODULES.has(v ?? "")) throw new UnknownMatchError(`match "-m ${v ?? ""}"`, text);
        modules.push(v!);
        i++;
        break;
      case "--dport":
      case "--destination-port":
        matches.push({ k: "dport", port: parseNumber(v, text, w), neg });
        i++;
        break;
      case "--comment":
        comment = unquoteWord(v ?? "");
        i++;
        break;
      case "--dst-type":
      case "--src-type":
        if (v !== "LOCAL") throw new UnknownMatchError(`address type "${v ?? ""}"`, text);
        matches.push({ k: "addrtype", side: w === "--dst-type" ? "dst" : "src", neg });
        i++;
        break;
      case "--mode":
        if (v !== "random") throw new UnknownMatchError(`statistic mode "${v ?? ""}"`, text);
        i++;
        break;
      case "--probability":
        matches.push({ k: "statistic", probability: parseNumber(v, text, w) });
        i++;
        break;
      case "--seconds":
        matches.push({ k: "recent-check", seconds: parseNumber(v, text, w) });
        i++;
        break;
      case "--name":
      case "--mask":
      case "--nfacct-name":
        i++;
        break;
      case "--rcheck":
      case "--reap":
      case "--set":
      case "--rsource":
        break;
      case "--mark": {
        const [value = "", mask = "0xffffffff"] = (v ?? "").split("/");
        matches.push({
          k: "mark",
          value: parseNumber(value, text, w),
          mask: parseNumber(mask, text, w),
          neg,
        });
        i++;
        break;
      }
      case "--ctstate":
        matches.push({ k: "ctstate", states: (v ?? "").split(","), neg });
        i++;
        break;
      case "--physdev-is-in":
        matches.push({ k: "physdev-in", neg });
        break;
      case "--match-set":
        matches.push({ k: "set", name: v ?? "", flags: words[i + 2] ?? "", neg });
        i += 2;
        break;
      case "--vaddr":
        matches.push({ k: "vaddr", cidr: addressMatch(v, text), neg });
        i++;
        break;
      case "--vproto":
        matches.push({ k: "vproto", proto: (v ?? "").toLowerCase(), neg });
        i++;
        break;
      case "--vport":
        matches.push({ k: "vport", port: parseNumber(v, text, w), neg });
        i++;
        break;
      case "-j":
      case "--jump":
      case "-g":
      case "--goto":
        target = parseTarget(words.slice(i + 1), text, w === "-g" || w === "--goto");
        i = words.length;
        break;
      default:
        throw new UnknownMatchError(`option "${w}"`, text);
    }
    neg = false;
  }
  return { matches, target, comment, modules, text };
}
