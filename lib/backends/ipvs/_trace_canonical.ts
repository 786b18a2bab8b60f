/**
 * Canonical address text, remembered: a trace compares the same few packet addresses with
 * hundreds of set members, bound addresses and rule specs, and parsing IPv6 text each time
 * dominated a differential run. Pure (the cache is bounded and only ever holds results).
 */
import { canonicalIP } from "../../net/mod.ts";

const remembered = new Map<string, string>();

/** `ip` in canonical form, or `ip` itself when it is not an address. */
export function canonicalAddress(ip: string): string {
  let c = remembered.get(ip);
  if (c === undefined) {
    c = canonicalIP(ip) ?? ip;
    if (remembered.size >= 100_000) remembered.clear();
    remembered.set(ip, c);
  }
  return c;
}
