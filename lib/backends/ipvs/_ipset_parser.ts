/**
 * Reads ipsets from `ipset save` (`create NAME TYPE …` / `add NAME MEMBER`) and from
 * `ipset list` (`Name:`, `Type:`, `Members:` blocks). Members of the types IPVS mode uses are
 * put in the spelling desired members use, so the two compare as strings.
 */
import { canonicalMember, type IpsetType } from "./_ipset_specs.ts";

/** One set read from the kernel. */
export interface KernelIpset {
  readonly type: string;
  readonly members: Set<string>;
}

const KNOWN_TYPES = new Set<string>([
  "hash:ip",
  "hash:ip,port",
  "hash:ip,port,ip",
  "hash:ip,port,net",
  "bitmap:port",
]);

function canonical(type: string, member: string): string {
  return KNOWN_TYPES.has(type) ? canonicalMember(type as IpsetType, member) : member;
}

/** Parses `ipset save` output into sets by name; unknown lines are ignored. */
export function parseIpsetSave(text: string): Map<string, KernelIpset> {
  const sets = new Map<string, KernelIpset>();
  for (const raw of text.split("\n")) {
    const words = raw.trim().split(/\s+/);
    const [verb, name, arg] = words;
    if (name === undefined || arg === undefined) continue;
    if (verb === "create") {
      sets.set(name, { type: arg, members: new Set() });
    } else if (verb === "add") {
      const set = sets.get(name);
      set?.members.add(canonical(set.type, arg));
    }
  }
  return sets;
}

/** Parses `ipset list [NAME]` output into sets by name. */
export function parseIpsetList(text: string): Map<string, KernelIpset> {
  const sets = new Map<string, KernelIpset>();
  let name: string | null = null;
  let type = "";
  let inMembers = false;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("Name:")) {
      name = line.slice(5).trim();
      type = "";
      inMembers = false;
    } else if (line.startsWith("Type:") && name !== null) {
      type = line.slice(5).trim();
      sets.set(name, { type, members: new Set() });
    } else if (line === "Members:") {
      inMembers = true;
    } else if (inMembers && line !== "" && name !== null) {
      const member = line.split(/\s+/)[0] ?? "";
      sets.get(name)?.members.add(canonical(type, member));
    }
  }
  return sets;
}
