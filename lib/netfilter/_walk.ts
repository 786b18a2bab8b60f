/**
 * Walks one packet through one iptables chain and what it jumps to, for the iptables-mode and
 * IPVS-mode tracers alike. `-m statistic` splits the walk into weighted branches (each
 * endpoint's share), so a walk returns every way the packet can leave the chain. New
 * connections only: `-m recent --rcheck` never matches (it names the affinity timeout
 * instead), conntrack state is NEW. In built-in chains only the jumps into `KUBE-` chains are
 * followed (other software's rules are not ours). Pure.
 */
import { cidrContains } from "../net/mod.ts";
import { type CompiledRule, compileRule, type Match, UnknownMatchError } from "./_compile.ts";
export { IPTABLES_MODE_MODULES, IPVS_MODE_MODULES } from "./_compile.ts";
import { BUILTIN_CHAINS, chainRules, type IptablesRule, type IptablesRules } from "./_rule_set.ts";

/** A virtual server as `-m ipvs` sees it. */
export interface WalkVirtualServer {
  readonly address: string;
  readonly port: number;
  /** Lower case. */
  readonly proto: string;
}

/** The packet as the rules see it at one point of its way. */
export interface WalkPacket {
  readonly src: string;
  readonly dst: string;
  readonly dport: number;
  /** Lower case. */
  readonly proto: string;
  readonly mark: number;
  /** The nat table rewrote the destination. */
  readonly dnated: boolean;
  /** The virtual server IPVS chose for it (`-m ipvs --vaddr …`), or null. */
  readonly vs: WalkVirtualServer | null;
}

/** One way out of a walk, with its share of the packets that entered. */
export interface WalkState {
  readonly weight: number;
  readonly packet: WalkPacket;
  /** User chains entered, in order. */
  readonly path: readonly string[];
  /** Terminal target (ACCEPT, DROP, REJECT, DNAT, MASQUERADE) or null when it fell through. */
  readonly verdict: string | null;
  /** The rule that gave the verdict. */
  readonly verdictRule: CompiledRule | null;
  /** The chain holding verdictRule. */
  readonly verdictChain: string;
  /** The mark when the chain that DNATed was entered (tells hairpin SNAT from masquerade). */
  readonly markBeforeDnatChain: number;
  /** `--seconds` of the affinity checks passed on the way; 0 if none. */
  readonly affinitySeconds: number;
  /** The service port named by the last capture rule taken (`ns/name:port`), or "". */
  readonly servicePortComment: string;
}

/** What the walk knows about where the packet is. */
export interface WalkContext {
  readonly rules: IptablesRules;
  readonly table: string;
  /** Whether an address is local to the node (for `-m addrtype ... LOCAL`). */
  readonly isLocal: (ip: string) => boolean;
  /**
   * The packet came from a local pod: through a pod interface (`-i`) or a bridge port
   * (`-m physdev --physdev-is-in`). False in OUTPUT.
   */
  readonly fromPod: boolean;
  /** The `-m` modules the mode writes; a rule loading another is refused by name. */
  readonly modules: ReadonlySet<string>;
  /** Whether the packet is in ipset `name` under `flags` (`dst,dst`); absent: no sets. */
  readonly inSet?: (name: string, flags: string, packet: WalkPacket) => boolean;
}

/** A new connection's packet as it enters the first hook: no mark, not rewritten. */
export function newConnection(
  p: Pick<WalkPacket, "src" | "dst" | "dport" | "proto">,
): WalkPacket {
  return {
    src: p.src,
    dst: p.dst,
    dport: p.dport,
    proto: p.proto,
    mark: 0,
    dnated: false,
    vs: null,
  };
}

/** A walk's starting point: the whole of a new connection, nothing entered or decided yet. */
export function walkStart(packet: WalkPacket): WalkState {
  return {
    weight: 1,
    packet,
    path: [],
    verdict: null,
    verdictRule: null,
    verdictChain: "",
    markBeforeDnatChain: 0,
    affinitySeconds: 0,
    servicePortComment: "",
  };
}

const compiled = new WeakMap<IptablesRule, CompiledRule>();
const MIN_WEIGHT = 1e-12;
const MAX_DEPTH = 64;

function compile(rule: IptablesRule, modules: ReadonlySet<string>): CompiledRule {
  let c = compiled.get(rule);
  if (c === undefined) {
    c = compileRule(rule);
    compiled.set(rule, c);
  }
  for (const m of c.modules) {
    if (!modules.has(m)) throw new UnknownMatchError(`match "-m ${m}"`, c.text);
  }
  return c;
}

/** Evaluates the deterministic matches; returns the statistic probability (1 if none), or 0. */
function evaluate(c: CompiledRule, p: WalkPacket, ctx: WalkContext): number {
  let probability = 1;
  for (const m of c.matches) {
    const ok = single(m, p, ctx, c.text);
    if (typeof ok === "number") probability *= ok;
    else if (!ok) return 0;
  }
  return probability;
}

function single(m: Match, p: WalkPacket, ctx: WalkContext, text: string): boolean | number {
  const flip = (b: boolean) => "neg" in m && m.neg ? !b : b;
  switch (m.k) {
    case "src":
      return flip(cidrContains(m.cidr, p.src));
    case "dst":
      return flip(cidrContains(m.cidr, p.dst));
    case "proto":
      return flip(m.proto === p.proto);
    case "dport":
      return flip(m.port === p.dport);
    case "addrtype":
      return flip(ctx.isLocal(m.side === "src" ? p.src : p.dst));
    case "statistic":
      return m.probability;
    case "recent-check":
      return false;
    case "mark":
      return flip(((p.mark & m.mask) >>> 0) === ((m.value & m.mask) >>> 0));
    case "ctstate":
      return flip(m.states.includes("NEW") || (p.dnated && m.states.includes("DNAT")));
    case "in-iface":
      // Only the local-traffic detector writes `-i` (a bridge, or a prefix with "+"): pods.
      return flip(m.name !== "" && ctx.fromPod);
    case "physdev-in":
      return flip(ctx.fromPod);
    case "set":
      if (ctx.inSet === undefined) {
        throw new UnknownMatchError(`ipset "${m.name}" (no sets known)`, text);
      }
      return flip(ctx.inSet(m.name, m.flags, p));
    case "vaddr":
      return flip(p.vs !== null && cidrContains(m.cidr, p.vs.address));
    case "vproto":
      return flip(p.vs !== null && p.vs.proto === m.proto);
    case "vport":
      return flip(p.vs !== null && p.vs.port === m.port);
  }
}

const TERMINAL = new Set(["ACCEPT", "DROP", "REJECT", "DNAT", "MASQUERADE"]);

function applyRule(c: CompiledRule, chain: string, s: WalkState, ctx: WalkContext): WalkState {
  const t = c.target!;
  let packet = s.packet;
  let servicePortComment = s.servicePortComment;
  if (t.name === "MARK") {
    const mark = (((packet.mark & ~(t.markMask ?? 0)) ^ (t.markXor ?? 0)) | (t.markOr ?? 0)) >>> 0;
    return { ...s, packet: { ...packet, mark } };
  }
  if (t.name === "DNAT") {
    const to = t.toDestination ?? "";
    const m = /^\[?([^\]]*?)\]?:(\d+)$/.exec(to);
    if (m === null) throw new Error(`Cannot trace through rule "${c.text}": bad DNAT "${to}"`);
    packet = { ...packet, dst: m[1]!, dport: Number(m[2]), dnated: true };
  }
  if (
    c.comment !== null && (chain === "KUBE-SERVICES" || chain === "KUBE-NODEPORTS") &&
    ctx.table === "nat"
  ) {
    const first = c.comment.split(" ")[0] ?? "";
    if (first.includes("/")) servicePortComment = first;
  }
  return { ...s, packet, servicePortComment };
}

/** Walks `chain` from its first rule; states with verdict null fell off its end (or RETURNed). */
export function walkChain(
  ctx: WalkContext,
  chain: string,
  start: WalkState,
  depth = 0,
): WalkState[] {
  if (depth > MAX_DEPTH) throw new Error(`Cannot trace: chains nest deeper than ${MAX_DEPTH}`);
  const rules = chainRules(ctx.rules, ctx.table, chain);
  if (rules === null) {
    throw new Error(`Cannot trace: chain ${chain} of table ${ctx.table} does not exist`);
  }
  const builtin = BUILTIN_CHAINS.has(chain);
  const entered = { ...start, markBeforeDnatChain: start.packet.mark };
  return walkFrom(ctx, chain, rules, 0, entered, builtin, depth);
}

function walkFrom(
  ctx: WalkContext,
  chain: string,
  rules: readonly IptablesRule[],
  from: number,
  state: WalkState,
  builtin: boolean,
  depth: number,
): WalkState[] {
  const out: WalkState[] = [];
  let s = state;
  for (let i = from; i < rules.length; i++) {
    const rule = rules[i]!;
    // In built-in chains only the jumps into kube-proxy's chains are ours to follow.
    if (builtin && !/(-j|-g|--jump|--goto) KUBE-/.test(rule.spec)) continue;
    const c = compile(rule, ctx.modules);
    const check = c.matches.find((m) => m.k === "recent-check");
    if (check !== undefined && check.k === "recent-check") {
      // An affinity check: a new client has no entry yet, but the timeout is what we report.
      s = { ...s, affinitySeconds: Math.max(s.affinitySeconds, check.seconds) };
    }
    const p = evaluate(c, s.packet, ctx);
    if (p <= 0) continue;
    const taken = take(ctx, chain, c, { ...s, weight: s.weight * p }, depth);
    const cont: WalkState[] = [];
    for (const t of taken) {
      if (t.weight <= MIN_WEIGHT) continue;
      if (t.verdict === "CONTINUE") cont.push({ ...t, verdict: null });
      else if (t.verdict === "END") out.push({ ...t, verdict: null });
      else out.push(t);
    }
    if (p < 1) {
      // The rule took a share p; the rest goes on to the next rule.
      for (const t of cont) out.push(...walkFrom(ctx, chain, rules, i + 1, t, builtin, depth));
      s = { ...s, weight: s.weight * (1 - p) };
      if (s.weight <= MIN_WEIGHT) return out;
      continue;
    }
    for (const t of cont.slice(1)) {
      out.push(...walkFrom(ctx, chain, rules, i + 1, t, builtin, depth));
    }
    if (cont.length === 0) return out;
    s = cont[0]!;
  }
  out.push({ ...s, verdict: null });
  return out;
}

/**
 * Applies a matched rule. Verdict "CONTINUE" means go on with the next rule of this chain,
 * "END" leave this chain (RETURN, or a goto whose chain ended).
 */
function take(
  ctx: WalkContext,
  chain: string,
  c: CompiledRule,
  s: WalkState,
  depth: number,
): WalkState[] {
  const t = c.target;
  if (t === null) return [{ ...s, verdict: "CONTINUE" }];
  const applied = applyRule(c, chain, s, ctx);
  // RETURN ends this chain (END); a built-in chain's end is its policy, ACCEPT here.
  if (t.name === "RETURN") return [{ ...applied, verdict: "END" }];
  if (t.name === "MARK") return [{ ...applied, verdict: "CONTINUE" }];
  if (TERMINAL.has(t.name)) {
    return [{ ...applied, verdict: t.name, verdictRule: c, verdictChain: chain }];
  }
  const step = ctx.table === "nat" ? t.name : `${ctx.table}:${t.name}`;
  const sub = walkChain(ctx, t.name, { ...applied, path: [...applied.path, step] }, depth + 1)
    .map((r) => ({
      ...r,
      // The mark at entry of the chain that DNATed must survive the return to the caller.
      markBeforeDnatChain: r.verdict === "DNAT" ? r.markBeforeDnatChain : s.markBeforeDnatChain,
    }));
  // A goto's chain returns to our caller; a jump's chain comes back here.
  if (t.goto) return sub.map((r) => r.verdict === null ? { ...r, verdict: "END" } : r);
  return sub.map((r) => r.verdict === null ? { ...r, verdict: "CONTINUE" } : r);
}
