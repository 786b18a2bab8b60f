/** Cache keys: a short hash of everything an artefact is built from. */
import { createHash } from "node:crypto";

/**
 * A 16-hex-digit SHA-256 prefix of `inputs` (key order does not matter), naming a cache entry:
 * any change of an input gives a new entry instead of a stale hit.
 */
export function cacheKey(inputs: Readonly<Record<string, unknown>>): string {
  const sorted = Object.keys(inputs).sort().map((k) => [k, inputs[k]]);
  return createHash("sha256").update(JSON.stringify(sorted)).digest("hex").slice(0, 16);
}
