/**
 * Structural equality for the plain data the brain keeps (validated objects, ServicePortStates):
 * it is how a change that changes nothing is recognised and an unchanged state object reused.
 */

/** True when two JSON-like values (primitives, arrays, plain objects) are structurally equal. */
export function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  const keys = Object.keys(ra);
  if (keys.length !== Object.keys(rb).length) return false;
  for (const k of keys) {
    if (!Object.hasOwn(rb, k) || !deepEqual(ra[k], rb[k])) return false;
  }
  return true;
}
