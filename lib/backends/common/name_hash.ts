/**
 * The hash upstream derives object names from (iptables chains, nftables chains and sets):
 * RFC 4648 base32 of the SHA-256 of a name, cut to a length each mode chooses.
 */
import { createHash } from "node:crypto";

const BASE32_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/** RFC 4648 base32 (Go's base32.StdEncoding), without the padding we never reach. */
function base32(bytes: Uint8Array): string {
  let out = "";
  let buffer = 0;
  let bits = 0;
  for (const b of bytes) {
    buffer = (buffer << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += BASE32_ALPHABET[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
    buffer &= (1 << bits) - 1;
  }
  if (bits > 0) out += BASE32_ALPHABET[(buffer << (5 - bits)) & 31];
  return out;
}

/** The first `length` characters of base32(sha256(input)): 16 for iptables, 8 for nftables. */
export function nameHash(input: string, length: number): string {
  const digest = createHash("sha256").update(input).digest();
  return base32(new Uint8Array(digest)).slice(0, length);
}
