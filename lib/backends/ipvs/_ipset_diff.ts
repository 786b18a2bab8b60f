/**
 * Desired set members vs `ipset save` → one `ipset restore` input: every set created with
 * `-exist` (upstream ensures them every sync), stale members deleted, missing ones added.
 * Sets that are not ours are never touched, and ours are never destroyed here.
 */
import type { IPFamily } from "../../proxy/mod.ts";
import { linesText } from "../common/mod.ts";
import type { KernelIpset } from "./_ipset_parser.ts";
import { IPSET_SPECS, ipsetCreateLine, ipsetName } from "./_ipset_specs.ts";

/** The restore input turning `current` into `desired` (members by IPv4 set name). */
export function buildIpsetRestore(
  desired: ReadonlyMap<string, ReadonlySet<string>>,
  current: ReadonlyMap<string, KernelIpset>,
  family: IPFamily,
): string {
  const out: string[] = [];
  for (const spec of IPSET_SPECS) out.push(ipsetCreateLine(spec, family));
  for (const spec of IPSET_SPECS) {
    const name = ipsetName(spec.base, family);
    const want = desired.get(spec.base) ?? new Set<string>();
    const have = current.get(name)?.members ?? new Set<string>();
    for (const m of have) if (!want.has(m)) out.push(`del ${name} ${m} -exist`);
    for (const m of want) if (!have.has(m)) out.push(`add ${name} ${m} -exist`);
  }
  return linesText(out);
}

/**
 * The restore input of a partial sync: only members that appeared or vanished, on sets the
 * last full sync created ("" when there is nothing to do).
 */
export function buildIpsetDeltaRestore(
  add: readonly (readonly [string, string])[],
  del: readonly (readonly [string, string])[],
  family: IPFamily,
): string {
  const out: string[] = [];
  for (const [set, m] of del) out.push(`del ${ipsetName(set, family)} ${m} -exist`);
  for (const [set, m] of add) out.push(`add ${ipsetName(set, family)} ${m} -exist`);
  return linesText(out);
}
