/**
 * The conntrack table as `conntrack -L` prints it: one flow per line, the original tuple's
 * `src= dst= sport= dport=` pairs first and the reply tuple's second. Pure; the reconciler reads
 * only the fields that say where a flow to a service went.
 */
import type { Protocol } from "../proxy/mod.ts";

/** One conntrack flow: its original and reply tuples. */
export interface ConntrackEntry {
  readonly protocol: Protocol;
  readonly origSrc: string;
  readonly origDst: string;
  readonly origSport: number;
  readonly origDport: number;
  /** Where the flow was DNATed to (the original destination when it was not DNATed). */
  readonly replySrc: string;
  readonly replySport: number;
  /** No packet has gone the reply way yet (`[UNREPLIED]`, a one-way sender). */
  readonly unreplied: boolean;
}

/** What one listing held: the flows read, and the lines that could not be read. */
export interface ConntrackListing {
  readonly entries: ConntrackEntry[];
  /** Lines that were not a UDP/SCTP flow with both tuples; they are never deleted. */
  readonly unparsed: string[];
}

const PROTOCOLS: Readonly<Record<string, Protocol>> = { udp: "UDP", sctp: "SCTP", tcp: "TCP" };
const IP = /^[0-9a-fA-F.:]+$/;

function port(v: string | undefined): number | undefined {
  if (v === undefined || !/^\d{1,5}$/.test(v)) return undefined;
  const n = Number(v);
  return n <= 65535 ? n : undefined;
}

/** Reads one line; undefined when it is not a flow with both tuples complete. */
export function parseConntrackLine(line: string): ConntrackEntry | undefined {
  const words = line.trim().split(/\s+/);
  // `-o extended` prefixes the family name and number: "ipv4 2 udp 17 ...".
  if (words[0] === "ipv4" || words[0] === "ipv6") words.splice(0, 2);
  const protocol = PROTOCOLS[words[0] ?? ""];
  if (!protocol) return undefined;
  const src: string[] = [], dst: string[] = [], sport: string[] = [], dport: string[] = [];
  let unreplied = false;
  for (const w of words) {
    if (w === "[UNREPLIED]") unreplied = true;
    const eq = w.indexOf("=");
    if (eq < 0) continue;
    const k = w.slice(0, eq), v = w.slice(eq + 1);
    if (k === "src") src.push(v);
    else if (k === "dst") dst.push(v);
    else if (k === "sport") sport.push(v);
    else if (k === "dport") dport.push(v);
  }
  const [origSrc, replySrc] = src, [origDst] = dst;
  const origSport = port(sport[0]), origDport = port(dport[0]), replySport = port(sport[1]);
  if (
    src.length !== 2 || dst.length !== 2 || origSrc === undefined || replySrc === undefined ||
    origDst === undefined || !IP.test(origSrc) || !IP.test(origDst) || !IP.test(replySrc) ||
    origSport === undefined || origDport === undefined || replySport === undefined
  ) return undefined;
  return {
    protocol,
    origSrc: origSrc.toLowerCase(),
    origDst: origDst.toLowerCase(),
    origSport,
    origDport,
    replySrc: replySrc.toLowerCase(),
    replySport,
    unreplied,
  };
}

/** Reads a whole `conntrack -L` listing; blank lines are skipped, bad lines kept aside. */
export function parseConntrackList(text: string): ConntrackListing {
  const entries: ConntrackEntry[] = [];
  const unparsed: string[] = [];
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const e = parseConntrackLine(line);
    if (e) entries.push(e);
    else unparsed.push(line);
  }
  return { entries, unparsed };
}
