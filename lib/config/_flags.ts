/**
 * Go/pflag-style argument parsing: `--flag=value`, `--flag value`, `-v=4`, `-v 4`, `-v4`,
 * `--bool`, `--bool=false`, `--` and interspersed positionals. node:util parseArgs is not used
 * because it cannot express `--bool=false`, `-v=4` or typed values without a second pass over
 * its raw tokens, which would be this parser again.
 */
import { canonicalIP, ipFamily, joinHostPort } from "../net/mod.ts";
import { parseDuration } from "./duration.ts";
import type { FlagSpec, FlagTable, FlagValue } from "./_flag_table.ts";
import { ConfigError, type VModuleItem } from "./types.ts";

/** The flags given on a command line, by long name, and the positional arguments. */
export interface ParsedFlags {
  readonly values: ReadonlyMap<string, FlagValue>;
  /** The text of each flag's last occurrence, for error messages. */
  readonly texts: ReadonlyMap<string, string>;
  readonly positionals: readonly string[];
}

const TRUE_WORDS = ["1", "t", "T", "true", "TRUE", "True"];
const FALSE_WORDS = ["0", "f", "F", "false", "FALSE", "False"];

function parseInteger(text: string, min: number, max: number): number | null {
  const t = text.trim();
  let n: number;
  if (/^[+-]?\d+$/.test(t)) n = Number(t);
  else if (/^[+-]?0[xX][0-9a-fA-F]+$/.test(t)) {
    n = (t.startsWith("-") ? -1 : 1) * Number(t.replace(/^[+-]/, ""));
  } else return null;
  return Number.isSafeInteger(n) && n >= min && n <= max ? n : null;
}

function splitList(text: string): string[] {
  return text === "" ? [] : text.split(",").map((s) => s.trim());
}

type Parsed = { value: FlagValue } | { expected: string };

function parseHostPort(text: string): string | null {
  if (text === "") return "";
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  const plain = /^([^:]+)(?::(\d+))?$/.exec(text);
  const [host, port] = bracketed
    ? [bracketed[1]!, bracketed[2]]
    : plain
    ? [plain[1]!, plain[2]]
    : [text, undefined];
  if (ipFamily(host) === null) return null;
  if (port === undefined) return host.includes(":") ? `[${host}]` : host;
  const p = Number(port);
  return p >= 0 && p <= 65535 ? joinHostPort(host, p) : null;
}

function parseIPList(text: string): string[] | null {
  const ips = splitList(text).map((s) => canonicalIP(s));
  if (ips.length === 0 || ips.some((ip) => ip === null)) return null;
  const families = ips.map((ip) => ipFamily(ip!));
  if (new Set(families).size !== families.length) return null;
  return ips as string[];
}

function parseMap(text: string): Record<string, boolean> | null {
  const out: Record<string, boolean> = {};
  for (const pair of splitList(text)) {
    const eq = pair.indexOf("=");
    const key = pair.slice(0, eq).trim();
    const word = pair.slice(eq + 1).trim();
    if (eq <= 0 || key === "") return null;
    if (TRUE_WORDS.includes(word)) out[key] = true;
    else if (FALSE_WORDS.includes(word)) out[key] = false;
    else return null;
  }
  return out;
}

function parseVModule(text: string): VModuleItem[] | null {
  const items: VModuleItem[] = [];
  for (const pair of splitList(text)) {
    const m = /^([^=]+)=(\d+)$/.exec(pair);
    if (m === null) return null;
    items.push({ filePath: m[1]!, verbosity: Number(m[2]) });
  }
  return items;
}

/** Converts a flag's text to its typed value, or says what was expected. */
function parseValue(spec: FlagSpec, text: string): Parsed {
  const or = (value: FlagValue | null, expected: string): Parsed =>
    value === null ? { expected } : { value };
  switch (spec.kind) {
    case "bool":
      if (TRUE_WORDS.includes(text)) return { value: true };
      if (FALSE_WORDS.includes(text)) return { value: false };
      return { expected: "true or false" };
    case "string":
      return { value: text };
    case "int32":
      return or(parseInteger(text, -2147483648, 2147483647), "a 32-bit integer");
    case "uint32":
      return or(parseInteger(text, 0, 4294967295), "a non-negative integer");
    case "float": {
      const ok = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text.trim());
      return or(ok ? Number(text) : null, "a number");
    }
    case "duration":
      try {
        return { value: parseDuration(text) };
      } catch {
        return { expected: 'a duration such as "30s", "1m30s" or "500ms"' };
      }
    case "enum": {
      const values = spec.values ?? [];
      return or(values.includes(text) ? text : null, `one of ${values.join(", ")}`);
    }
    case "list":
      return { value: splitList(text) };
    case "map":
      return or(parseMap(text), 'comma-separated name=true|false pairs such as "A=true,B=false"');
    case "ip":
      return or(canonicalIP(text.trim()), "an IP address");
    case "ipList":
      return or(parseIPList(text), 'one IP or an IPv4,IPv6 pair such as "192.168.0.2,fd00::2"');
    case "hostPort":
      return or(parseHostPort(text.trim()), 'an IP or IP:port such as "0.0.0.0:10256"');
    case "vmodule":
      return or(parseVModule(text), 'comma-separated pattern=N pairs such as "proxier*=4"');
  }
}

function store(values: Map<string, FlagValue>, spec: FlagSpec, value: FlagValue): void {
  const previous = values.get(spec.name);
  // pflag: repeating a slice or map flag accumulates; any other flag keeps the last value.
  if (spec.kind === "list" && !spec.lastWins && Array.isArray(previous)) {
    values.set(spec.name, [...(previous as string[]), ...(value as string[])]);
  } else if (spec.kind === "map" && typeof previous === "object") {
    values.set(spec.name, {
      ...(previous as Record<string, boolean>),
      ...(value as Record<string, boolean>),
    });
  } else {
    values.set(spec.name, value);
  }
}

/** Parses `args` against the flag table. Throws ConfigError naming the flag on any problem. */
export function parseFlags(args: readonly string[], table: FlagTable): ParsedFlags {
  const values = new Map<string, FlagValue>();
  const texts = new Map<string, string>();
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === "--") {
      positionals.push(...args.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      positionals.push(arg);
      continue;
    }
    const long = arg.startsWith("--");
    const body = arg.slice(long ? 2 : 1);
    let name: string;
    let inline: string | undefined;
    let spec: FlagSpec | undefined;
    if (long) {
      const eq = body.indexOf("=");
      // Upstream normalises "_" to "-" in flag names (--iptables_sync_period works).
      name = (eq === -1 ? body : body.slice(0, eq)).replaceAll("_", "-");
      inline = eq === -1 ? undefined : body.slice(eq + 1);
      spec = table.byName.get(name);
    } else {
      name = body.slice(0, 1);
      const rest = body.slice(1);
      inline = rest === "" ? undefined : rest.startsWith("=") ? rest.slice(1) : rest;
      spec = table.byShorthand.get(name);
      if (spec?.kind === "bool" && inline !== undefined && !rest.startsWith("=")) spec = undefined;
    }
    const shown = long ? `--${name}` : `-${name}`;
    if (spec === undefined || name === "") {
      throw new ConfigError(`Unknown flag "${arg}": see --help for the flags kube-proxy accepts`);
    }
    let text = inline;
    if (text === undefined) {
      if (spec.kind === "bool") text = "true";
      else if (i + 1 < args.length) text = args[++i]!;
      else throw new ConfigError(`Missing value for ${shown}: expected ${parseValueHint(spec)}`);
    }
    const parsed = parseValue(spec, text);
    if ("expected" in parsed) {
      throw new ConfigError(`Invalid ${shown} "${text}": expected ${parsed.expected}`);
    }
    store(values, spec, parsed.value);
    texts.set(spec.name, text);
  }
  return { values, texts, positionals };
}

function parseValueHint(spec: FlagSpec): string {
  const probe = parseValue(spec, "\u0000");
  return "expected" in probe ? probe.expected : "a value";
}
