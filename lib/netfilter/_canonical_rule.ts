/**
 * A rendered `-A CHAIN ...` rule as iptables prints it back (`iptables -S`, `iptables-save`):
 * addresses with their prefix length, the core fields first (-s, -d, -i, -o, -p), each match
 * with its options in the order its save function prints them, MARK as --set-xmark, the
 * statistic probability as the kernel stores it. Two rules that print the same are the same
 * rule, so a chain whose canonical lines equal the lines read from the kernel needs no rewrite.
 * Pure. Anything this does not know gives undefined: the chain is then rewritten, never skipped.
 */
import type { IPFamily } from "../proxy/mod.ts";
import { ruleWords, wordText } from "./_tokenize.ts";

/** Options a match takes, and whether each takes a value. */
const MATCH_OPTIONS: Readonly<Record<string, Readonly<Record<string, boolean>>>> = {
  comment: { "--comment": true },
  tcp: { "--dport": true },
  udp: { "--dport": true },
  sctp: { "--dport": true },
  addrtype: { "--src-type": true, "--dst-type": true },
  conntrack: { "--ctstate": true },
  mark: { "--mark": true },
  statistic: { "--mode": true, "--probability": true },
  nfacct: { "--nfacct-name": true },
  recent: { "--name": true, "--set": false, "--rcheck": false, "--seconds": true, "--reap": false },
};

/** Options a target takes (all with a value but --random-fully). */
const TARGET_OPTIONS: Readonly<Record<string, Readonly<Record<string, boolean>>>> = {
  DNAT: { "--to-destination": true },
  MARK: { "--or-mark": true, "--xor-mark": true },
  MASQUERADE: { "--random-fully": false },
};

const CORE = ["-s", "-d", "-i", "-o", "-p"] as const;
type Core = typeof CORE[number];

interface Option {
  readonly name: string;
  readonly value: string | undefined;
  readonly negated: boolean;
}

/** xtables_save_string: bare when only [A-Za-z0-9_-], else quoted with " \ ' escaped. */
function savedString(text: string): string {
  if (/^[A-Za-z0-9_-]+$/.test(text)) return text;
  return `"${text.replace(/["\\']/g, (c) => `\\${c}`)}"`;
}

function withPrefix(address: string, family: IPFamily): string {
  return address.includes("/") ? address : `${address}/${family === "IPv6" ? 128 : 32}`;
}

/** A mark as `0x%x`: no leading zeros, lower case; undefined if not a 32-bit number. */
function hex(text: string): string | undefined {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0 || n > 0xffffffff) return undefined;
  return `0x${n.toString(16)}`;
}

/** The statistic match's probability as stored (a fraction of 2^31) and printed (%.11f). */
function probability(text: string): string | undefined {
  const p = Number(text);
  if (!Number.isFinite(p) || p < 0 || p > 1) return undefined;
  return (Math.round(p * 0x80000000) / 0x80000000).toFixed(11);
}

function matchText(name: string, opts: readonly Option[], family: IPFamily): string | undefined {
  const get = (o: string) => opts.find((x) => x.name === o);
  const not = (o: Option | undefined) => o?.negated ? " !" : "";
  switch (name) {
    case "comment": {
      const c = get("--comment");
      return c?.value === undefined || c.negated ? undefined : ` --comment ${savedString(c.value)}`;
    }
    case "tcp":
    case "udp":
    case "sctp": {
      const d = get("--dport");
      return d === undefined ? "" : `${not(d)} --dport ${d.value}`;
    }
    case "addrtype": {
      const s = get("--src-type"), d = get("--dst-type");
      return (s ? `${not(s)} --src-type ${s.value}` : "") +
        (d ? `${not(d)} --dst-type ${d.value}` : "");
    }
    case "conntrack": {
      const s = get("--ctstate");
      return s === undefined ? undefined : `${not(s)} --ctstate ${s.value}`;
    }
    case "mark": {
      const m = get("--mark");
      const [mark = "", mask] = m?.value?.split("/") ?? [];
      const value = hex(mark), maskHex = mask === undefined ? "0xffffffff" : hex(mask);
      if (m === undefined || value === undefined || maskHex === undefined) return undefined;
      return `${not(m)} --mark ${value}${maskHex === "0xffffffff" ? "" : `/${maskHex}`}`;
    }
    case "statistic": {
      const mode = get("--mode"), p = get("--probability");
      const printed = p?.value === undefined ? undefined : probability(p.value);
      if (mode?.value !== "random" || printed === undefined || p?.negated) return undefined;
      return ` --mode random --probability ${printed}`;
    }
    case "nfacct": {
      // iptables' nfacct save prints two spaces before the name.
      const n = get("--nfacct-name");
      return n?.value === undefined || n.negated ? undefined : ` --nfacct-name  ${n.value}`;
    }
    case "recent": {
      const n = get("--name"), seconds = get("--seconds");
      if (n?.value === undefined || opts.some((o) => o.negated)) return undefined;
      const mask = family === "IPv6"
        ? "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"
        : "255.255.255.255";
      return (get("--set") ? " --set" : "") + (get("--rcheck") ? " --rcheck" : "") +
        (seconds ? ` --seconds ${seconds.value}` : "") + (get("--reap") ? " --reap" : "") +
        ` --name ${n.value} --mask ${mask} --rsource`;
    }
  }
  return undefined;
}

function targetText(name: string, opts: readonly Option[]): string | undefined {
  if (opts.some((o) => o.negated)) return undefined;
  const get = (o: string) => opts.find((x) => x.name === o);
  switch (name) {
    case "DNAT":
      return get("--to-destination") ? ` --to-destination ${get("--to-destination")!.value}` : "";
    case "MARK": {
      const or = get("--or-mark"), xor = get("--xor-mark");
      const value = hex((or ?? xor)?.value ?? "");
      if (value === undefined || opts.length !== 1) return undefined;
      return ` --set-xmark ${value}/${or ? value : "0x0"}`;
    }
    case "MASQUERADE":
      return get("--random-fully") ? " --random-fully" : "";
  }
  return opts.length === 0 ? "" : undefined;
}

/** The rule as iptables prints it, or undefined for a rule this does not know how to print. */
export function canonicalRule(line: string, family: IPFamily): string | undefined {
  const words: string[] = [];
  for (const w of ruleWords(line)) {
    const text = wordText(w);
    if (text === undefined) return undefined;
    words.push(text);
  }
  if (words[0] !== "-A" || words[1] === undefined) return undefined;
  const core = new Map<Core, { value: string; negated: boolean }>();
  const matches: { name: string; opts: Option[] }[] = [];
  let target: { name: string; opts: Option[] } | undefined;
  let negated = false;
  for (let i = 2; i < words.length; i++) {
    const w = words[i]!;
    if (w === "!") {
      if (negated) return undefined;
      negated = true;
      continue;
    }
    const value = words[i + 1];
    if ((CORE as readonly string[]).includes(w)) {
      if (value === undefined || core.has(w as Core) || target) return undefined;
      core.set(w as Core, { value, negated });
      i++;
    } else if (w === "-m") {
      if (value === undefined || !(value in MATCH_OPTIONS) || negated || target) return undefined;
      matches.push({ name: value, opts: [] });
      i++;
    } else if (w === "-j") {
      if (value === undefined || negated || target) return undefined;
      target = { name: value, opts: [] };
      i++;
    } else {
      // An option belongs to the target once it is named, else to the last match taking it.
      const owner = target
        ? (TARGET_OPTIONS[target.name]?.[w] !== undefined ? target : undefined)
        : matches.findLast((m) => MATCH_OPTIONS[m.name]![w] !== undefined);
      const table = target ? TARGET_OPTIONS[target.name] : MATCH_OPTIONS[owner?.name ?? ""];
      const takesValue = table?.[w];
      if (owner === undefined || takesValue === undefined || owner.opts.some((o) => o.name === w)) {
        return undefined;
      }
      if (takesValue && value === undefined) return undefined;
      owner.opts.push({ name: w, value: takesValue ? value : undefined, negated });
      if (takesValue) i++;
    }
    negated = false;
  }
  if (negated) return undefined;
  let out = `-A ${words[1]}`;
  for (const flag of CORE) {
    const f = core.get(flag);
    if (f === undefined) continue;
    const v = flag === "-s" || flag === "-d" ? withPrefix(f.value, family) : f.value;
    out += `${f.negated ? " !" : ""} ${flag} ${v}`;
  }
  for (const m of matches) {
    const text = matchText(m.name, m.opts, family);
    if (text === undefined) return undefined;
    out += ` -m ${m.name}${text}`;
  }
  // A rule without a target (a comment only) prints none.
  if (target === undefined) return out;
  const t = targetText(target.name, target.opts);
  return t === undefined ? undefined : `${out} -j ${target.name}${t}`;
}
