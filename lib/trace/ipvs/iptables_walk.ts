/**
 * The iptables half of an IPVS-mode trace: the nat and filter rules IPVS mode writes
 * (lib/backends/ipvs/render_iptables.ts), read from `iptables-save` or from the renderer's
 * restore input, and a walk of one new connection through them. It evaluates exactly the
 * matches those rules use (`-m set`, `addrtype`, `physdev`, `conntrack`, `mark`, `ipvs`,
 * addresses, protocol) and names anything else instead of guessing. In built-in chains only
 * the jumps into `KUBE-` chains are followed (other software's rules are not ours). Pure.
 */
import type { KernelIpset } from "../../backends/ipvs/mod.ts";
import { tokenizeRule } from "../../backends/iptables/mod.ts";
import { cidrContains, parseCIDR } from "../../net/mod.ts";
import { canonicalAddress } from "./canonical.ts";
import { ipsetMatches } from "./ipset_match.ts";

/** Tables of chains of rules, each rule its words after `-A CHAIN`. */
export type IptablesTables = Map<string, Map<string, string[][]>>;

const BUILTIN = new Set(["PREROUTING", "INPUT", "FORWARD", "OUTPUT", "POSTROUTING"]);

/** Parses iptables-save output or restore input (`-I` prepends, `:CHAIN` declares). */
export function parseIptablesTables(text: string): IptablesTables {
  const tables: IptablesTables = new Map();
  let current: Map<string, string[][]> | null = null;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    if (line.startsWith("*")) {
      current = tables.get(line.slice(1)) ?? new Map();
      tables.set(line.slice(1), current);
    } else if (line === "COMMIT") {
      current = null;
    } else if (current !== null && line.startsWith(":")) {
      current.set(line.slice(1).split(/\s+/)[0] ?? "", []);
    } else if (current !== null) {
      const words = tokenizeRule(line);
      const [op, chain = ""] = words;
      const rules = current.get(chain) ?? [];
      current.set(chain, rules);
      if (op === "-A") rules.push(words.slice(2));
      else if (op === "-I") rules.unshift(words.slice(2));
      else if (op === "-X") current.delete(chain);
    }
  }
  return tables;
}

/** The packet as iptables sees it at one hook. */
export interface IptablesPacket {
  readonly src: string;
  readonly dst: string;
  readonly dport: number;
  readonly proto: string;
  mark: number;
  /** The virtual server IPVS chose for it (`-m ipvs --vaddr …`), if any. */
  readonly vs: { readonly address: string; readonly port: number; readonly proto: string } | null;
}

/** What the walk knows besides the packet. */
export interface IptablesContext {
  readonly tables: IptablesTables;
  readonly table: "nat" | "filter";
  readonly sets: ReadonlyMap<string, KernelIpset>;
  readonly isLocal: (ip: string) => boolean;
  /**
   * The packet came from a local pod: through a pod interface (`-i`) or a bridge port
   * (`-m physdev --physdev-is-in`).
   */
  readonly fromPod: boolean;
}

/** How a walk ended: a terminal target, or null when it fell through or returned. */
export interface IptablesOutcome {
  readonly verdict: "ACCEPT" | "DROP" | "REJECT" | "MASQUERADE" | null;
  /** The chain holding the terminal rule. */
  readonly chain: string;
  /** `table:chain` of each user chain entered. */
  readonly path: string[];
}

function fail(what: string, words: readonly string[]): never {
  throw new RangeError(`Cannot trace through rule "${words.join(" ")}": unknown ${what}`);
}

// Rule specs repeat across packets (one KUBE-IPVS-OUT-FILTER rule per LB IP): parse once.
const cidrs = new Map<string, ReturnType<typeof parseCIDR>>();

function sameIP(a: string, b: string): boolean {
  return a === b || canonicalAddress(a) === canonicalAddress(b);
}

function inAddress(spec: string, ip: string): boolean {
  // A single address (bare, /32 or /128, as iptables-save prints it) is a text comparison.
  const [addr = "", prefix] = spec.split("/");
  const full = addr.includes(":") ? "128" : "32";
  if (prefix === undefined || prefix === full) return sameIP(addr, ip);
  let c = cidrs.get(spec);
  if (c === undefined) {
    c = parseCIDR(spec);
    if (cidrs.size >= 100_000) cidrs.clear();
    cidrs.set(spec, c);
  }
  return c !== null && cidrContains(c, ip);
}

const MODULES = new Set([
  "comment",
  "set",
  "physdev",
  "addrtype",
  "conntrack",
  "mark",
  "ipvs",
  "tcp",
  "udp",
  "sctp",
]);

/**
 * Evaluates a rule's matches; returns the target words, or null when it does not match. The
 * matches are ANDed, so the first one that fails decides (what follows it cannot match).
 */
function matchRule(
  words: readonly string[],
  p: IptablesPacket,
  ctx: IptablesContext,
): string[] | null {
  let neg = false;
  let ok = true;
  const need = (b: boolean) => {
    if (b === neg) ok = false;
    neg = false;
  };
  for (let i = 0; i < words.length && ok; i++) {
    const w = words[i]!;
    const v = words[i + 1] ?? "";
    if (w === "!") {
      neg = true;
      continue;
    }
    if (w === "-j" || w === "-g") return ok ? words.slice(i) : null;
    switch (w) {
      case "-s":
        need(inAddress(v, p.src)), i++;
        break;
      case "-d":
        need(inAddress(v, p.dst)), i++;
        break;
      case "-p":
        need(v.toLowerCase() === p.proto), i++;
        break;
      case "--dport":
        need(Number(v) === p.dport), i++;
        break;
      case "-m":
        if (!MODULES.has(v)) fail(`match "-m ${v}"`, words);
        i++;
        break;
      case "--comment":
        i++;
        break;
      case "--match-set": {
        const set = ctx.sets.get(v);
        if (set === undefined) fail(`ipset "${v}" (not in ipset save)`, words);
        need(ipsetMatches(set, v, words[i + 2] ?? "", p)), i += 2;
        break;
      }
      case "--physdev-is-in":
        need(ctx.fromPod);
        break;
      case "-i":
        // Only the local-traffic detector writes `-i` (a bridge, or a prefix with "+"): pods.
        need(ctx.fromPod), i++;
        break;
      case "--src-type":
      case "--dst-type":
        if (v !== "LOCAL") fail(`address type "${v}"`, words);
        need(ctx.isLocal(w === "--src-type" ? p.src : p.dst)), i++;
        break;
      case "--ctstate":
        need(v.split(",").includes("NEW")), i++;
        break;
      case "--mark": {
        const [value = "", mask = "0xffffffff"] = v.split("/");
        need(((p.mark & Number(mask)) >>> 0) === ((Number(value) & Number(mask)) >>> 0)), i++;
        break;
      }
      case "--vaddr":
        need(p.vs !== null && sameIP(p.vs.address, v)), i++;
        break;
      case "--vproto":
        need(p.vs !== null && p.vs.proto === v.toLowerCase()), i++;
        break;
      case "--vport":
        need(p.vs !== null && p.vs.port === Number(v)), i++;
        break;
      default:
        fail(`option "${w}"`, words);
    }
  }
  // A rule without a target only counts packets.
  return null;
}

/** Walks `chain` of `ctx.table`; marks are applied to `p` in place. */
export function walkIptables(
  ctx: IptablesContext,
  chain: string,
  p: IptablesPacket,
  path: string[] = [],
  depth = 0,
): IptablesOutcome {
  if (depth > 32) throw new RangeError(`Cannot trace: chains nest deeper than 32 at ${chain}`);
  const rules = ctx.tables.get(ctx.table)?.get(chain);
  if (rules === undefined) {
    if (BUILTIN.has(chain)) return { verdict: null, chain, path };
    throw new RangeError(`Cannot trace: chain ${chain} of table ${ctx.table} does not exist`);
  }
  if (!BUILTIN.has(chain)) path.push(`${ctx.table}:${chain}`);
  for (const words of rules) {
    const jump = words.findIndex((w) => w === "-j" || w === "-g");
    const target = words[jump + 1] ?? "";
    if (BUILTIN.has(chain) && !target.startsWith("KUBE-")) continue;
    const t = matchRule(words, p, ctx);
    if (t === null) continue;
    const opts = t.slice(2);
    switch (target) {
      case "MARK": {
        const [value = "", mask = "0xffffffff"] = (opts[1] ?? "").split("/");
        const n = Number(value);
        if (opts[0] === "--or-mark") p.mark = (p.mark | n) >>> 0;
        else if (opts[0] === "--xor-mark") p.mark = (p.mark ^ n) >>> 0;
        // iptables-save prints --or-mark M as --set-xmark M/M: zero the mask bits, then xor.
        else if (opts[0] === "--set-xmark") p.mark = ((p.mark & ~Number(mask)) ^ n) >>> 0;
        else fail(`MARK option "${opts[0] ?? ""}"`, words);
        continue;
      }
      case "RETURN":
        return { verdict: null, chain, path };
      case "ACCEPT":
      case "DROP":
      case "REJECT":
      case "MASQUERADE":
        return { verdict: target, chain, path };
      default: {
        if (!target.startsWith("KUBE-")) fail(`target "${target}"`, words);
        const sub = walkIptables(ctx, target, p, path, depth + 1);
        if (sub.verdict !== null) return sub;
        if (t[0] === "-g") return { verdict: null, chain, path };
      }
    }
  }
  return { verdict: null, chain, path };
}
