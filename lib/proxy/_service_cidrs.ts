/**
 * The ServiceCIDRs (networking.k8s.io/v1) the cluster allocates ClusterIPs from. nftables mode
 * drops new traffic to an address in them that no Service holds (upstream's "Drop traffic to
 * unallocated ClusterIPs"); the other modes ignore them. Entries are untrusted: a bad one is
 * skipped and reported, the object's good entries still count.
 */
import { cidrString, parseCIDR } from "../net/mod.ts";
import type { IPFamily } from "./types.ts";
import {
  dnsSubdomain,
  optArray,
  optRecord,
  runValidation,
  type Validation,
} from "./_validation_rules.ts";

/** One ServiceCIDR after validation: its name and its good CIDRs, canonical. */
export interface ValidatedServiceCIDR {
  readonly name: string;
  readonly cidrs: readonly string[];
}

/** A ServiceCIDR that validated, plus the reasons its skipped entries were dropped. */
export interface ServiceCIDRValidation {
  readonly value: ValidatedServiceCIDR;
  readonly skipped: readonly string[];
}

/** Why one spec.cidrs entry cannot become part of a rule, or undefined when it can. */
function entryProblem(raw: unknown): string | undefined {
  if (typeof raw !== "string") return "is not a string: expected a CIDR such as 172.30.0.0/16";
  const cidr = parseCIDR(raw);
  if (cidr === null) return "is not a valid CIDR: expected a block such as 172.30.0.0/16";
  if (cidrString(cidr) !== raw) {
    return `is not in canonical form: expected ${JSON.stringify(cidrString(cidr))}`;
  }
  // A /0 would turn "unallocated ClusterIPs" into "all forwarded traffic".
  if (cidr.prefix === 0) return "covers every address: expected a Service range";
  return undefined;
}

/**
 * Validates a raw ServiceCIDR. The object is rejected only when its name or spec is unusable;
 * bad spec.cidrs entries are left out and listed in `skipped`.
 */
export function validateServiceCIDR(
  raw: unknown,
): Validation<ServiceCIDRValidation> {
  const obj = raw as { metadata?: { name?: unknown }; spec?: unknown } | null | undefined;
  const rawName = obj?.metadata?.name;
  return runValidation(
    () => `ServiceCIDR ${JSON.stringify(typeof rawName === "string" ? rawName : "")}`,
    () => {
      const name = dnsSubdomain(rawName, "metadata.name");
      const spec = optRecord(obj?.spec, "spec");
      const cidrs: string[] = [];
      const skipped: string[] = [];
      for (const [i, entry] of optArray(spec.cidrs, "spec.cidrs").entries()) {
        const problem = entryProblem(entry);
        if (problem === undefined) cidrs.push(entry as string);
        else {
          skipped.push(
            `ServiceCIDR ${JSON.stringify(name)}: spec.cidrs[${i}] ${
              JSON.stringify(entry) ?? "undefined"
            } ${problem}`,
          );
        }
      }
      return { value: { name, cidrs }, skipped };
    },
  );
}

/** The CIDRs of every known ServiceCIDR, by object name. */
export class ServiceCIDRStore {
  readonly #byName = new Map<string, readonly string[]>();

  /** Sets (or replaces) one object's CIDRs. */
  set(value: ValidatedServiceCIDR): void {
    this.#byName.set(value.name, value.cidrs);
  }

  /** Forgets one object. */
  delete(name: string): void {
    this.#byName.delete(name);
  }

  /** The distinct CIDRs of `family` across all objects, sorted (stable rule text). */
  cidrsFor(family: IPFamily): readonly string[] {
    const out = new Set<string>();
    for (const cidrs of this.#byName.values()) {
      for (const c of cidrs) if (parseCIDR(c)?.family === family) out.add(c);
    }
    return [...out].sort();
  }
}
