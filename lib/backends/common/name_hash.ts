/**
 * The hash upstream derives object names from (iptables chains, nftables chains and sets):
 * RFC 4648 base32 of the SHA-256 of a name, cut to a length each mode chooses.
 */
import { sha256 } from "./_sha256.ts";

const BASE32_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const BASE32_CODES = Array.from(BASE32_ALPHABET, (c) => c.charCodeAt(0));

/** The character codes of each prefix seen (a handful: one per kind of chain or set). */
const prefixCodes = new Map<string, readonly number[]>();

/**
 * `prefix` then RFC 4648 base32 (Go's base32.StdEncoding) of `bytes[0, count)`, without
 * padding. Made from character codes in one go: appending a character at a time leaves V8 a
 * chain of string pieces, one per character past the 12th, in every name a proxier keeps.
 */
function base32(bytes: Uint8Array, count = bytes.length, prefix = ""): string {
  let codes = prefixCodes.get(prefix);
  if (codes === undefined) {
    codes = Array.from(prefix, (c) => c.charCodeAt(0));
    prefixCodes.set(prefix, codes);
  }
  const out = codes.slice();
  let buffer = 0;
  let bits = 0;
  for (let i = 0; i < count; i++) {
    buffer = (buffer << 8) | bytes[i]!;
    bits += 8;
    while (bits >= 5) {
      out.push(BASE32_CODES[(buffer >> (bits - 5)) & 31]!);
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out.push(BASE32_CODES[(buffer << (5 - bits)) & 31]!);
  return String.fromCharCode.apply(null, out);
}

/**
 * `prefix` and the first `length` characters of base32(sha256(input)), as one flat string: 16
 * characters for iptables, 8 for nftables.
 */
export function nameHash(input: string, length: number, prefix = ""): string {
  // Each 5 bytes make 8 characters: encode only the bytes the kept characters come from.
  const digest = sha256(input);
  const count = Math.min(digest.length, Math.ceil((length * 5) / 8));
  return base32(digest, count, prefix).slice(0, prefix.length + length);
}
