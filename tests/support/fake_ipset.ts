/**
 * A state-holding fake of ipset, for tests that must not need root. It holds sets (type,
 * family, members) and understands `ipset save`, `ipset list [-n] [NAME]`, `ipset restore`
 * (create/add/del/flush/destroy lines, stopping at the first bad one as the real tool does),
 * and `create`/`add`/`del`/`flush`/`destroy` as arguments, with `-exist`. Like the kernel it
 * refuses members that do not fit the set's type or family, creating a set again without
 * `-exist` or with another type, and destroying a set an iptables rule references.
 */
import type { CommandInput, CommandOutput, CommandRunner } from "../../lib/exec/mod.ts";

/** One set. */
export interface FakeSet {
  type: string;
  family: "inet" | "inet6";
  members: Set<string>;
}

/** The fake: a CommandRunner plus its state. */
export interface FakeIpset {
  readonly run: CommandRunner;
  readonly calls: CommandInput[];
  readonly sets: Map<string, FakeSet>;
  /** Sets referenced by iptables rules (destroy refused). */
  readonly referenced: Set<string>;
  /** Members of a set, sorted (empty when the set is missing). */
  members(name: string): string[];
}

const TYPES = new Set([
  "hash:ip",
  "hash:ip,port",
  "hash:ip,port,ip",
  "hash:ip,port,net",
  "bitmap:port",
]);

function ipOf(text: string, family: "inet" | "inet6"): string | null {
  if (family === "inet") {
    const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
    return m !== null && m.slice(1).every((o) => Number(o) <= 255) ? text : null;
  }
  return /^[0-9a-f:]+$/.test(text) && text.includes(":") ? text : null;
}

/** The member as ipset stores it, or null when it does not fit the set. */
function normalise(set: FakeSet, member: string): string | null {
  if (set.type === "bitmap:port") {
    return /^\d{1,5}$/.test(member) && Number(member) <= 65535 ? String(Number(member)) : null;
  }
  const parts = member.split(",");
  const ip = ipOf(parts[0] ?? "", set.family);
  if (ip === null) return null;
  if (set.type === "hash:ip") return parts.length === 1 ? ip : null;
  const pp = /^(tcp|udp|sctp):(\d{1,5})$/.exec(parts[1] ?? "");
  if (pp === null || Number(pp[2]) > 65535) return null;
  const head = `${ip},${pp[1]}:${Number(pp[2])}`;
  if (set.type === "hash:ip,port") return parts.length === 2 ? head : null;
  if (parts.length !== 3) return null;
  const third = parts[2]!;
  if (set.type === "hash:ip,port,ip") {
    const ip2 = ipOf(third, set.family);
    return ip2 === null ? null : `${head},${ip2}`;
  }
  const [net, prefix] = third.split("/");
  const ipNet = ipOf(net ?? "", set.family);
  const full = set.family === "inet" ? 32 : 128;
  if (
    ipNet === null || (prefix !== undefined && !(/^\d+$/.test(prefix) && Number(prefix) <= full))
  ) {
    return null;
  }
  // ipset prints a host-length net without its prefix.
  return prefix === undefined || Number(prefix) === full ? `${head},${ipNet}` : `${head},${third}`;
}

const ok = (stdout = ""): CommandOutput => ({ code: 0, stdout, stderr: "" });
const fail = (stderr: string): CommandOutput => ({ code: 1, stdout: "", stderr });

/** Creates a fake with no sets. */
export function createFakeIpset(): FakeIpset {
  const calls: CommandInput[] = [];
  const sets = new Map<string, FakeSet>();
  const referenced = new Set<string>();

  const apply = (words: readonly string[]): string | null => {
    const exist = words.includes("-exist");
    const w = words.filter((x) => x !== "-exist");
    const [verb, name, arg] = w;
    if (verb === "create") {
      if (name === undefined || arg === undefined || !TYPES.has(arg)) {
        return "Syntax error: bad create";
      }
      if (!/^[A-Za-z0-9_-]{1,31}$/.test(name)) return `Syntax error: setname '${name}' is invalid`;
      const fi = w.indexOf("family");
      const family = fi === -1 ? "inet" : w[fi + 1];
      if (family !== "inet" && family !== "inet6") return "Syntax error: bad family";
      const existing = sets.get(name);
      if (existing) {
        if (!exist || existing.type !== arg) {
          return "Set cannot be created: set with the same name already exists";
        }
        return null;
      }
      sets.set(name, { type: arg, family, members: new Set() });
      return null;
    }
    if (verb === "destroy") {
      if (name === undefined) {
        if ([...sets.keys()].some((n) => referenced.has(n))) {
          return "Set cannot be destroyed: it is in use by a kernel component";
        }
        sets.clear();
        return null;
      }
      if (!sets.has(name)) return "The set with the given name does not exist";
      if (referenced.has(name)) {
        return "Set cannot be destroyed: it is in use by a kernel component";
      }
      sets.delete(name);
      return null;
    }
    const set = name === undefined ? undefined : sets.get(name);
    if (set === undefined) return "The set with the given name does not exist";
    if (verb === "flush") {
      set.members.clear();
      return null;
    }
    if ((verb === "add" || verb === "del") && arg !== undefined && w.length === 3) {
      const m = normalise(set, arg);
      if (m === null) return `Syntax error: '${arg}' is invalid as an element of ${set.type}`;
      if (verb === "add") {
        if (set.members.has(m) && !exist) {
          return "Element cannot be added to the set: it's already added";
        }
        set.members.add(m);
      } else {
        if (!set.members.has(m) && !exist) {
          return "Element cannot be deleted from the set: it's not added";
        }
        set.members.delete(m);
      }
      return null;
    }
    return `Syntax error: unknown command "${words.join(" ")}"`;
  };

  const header = (s: FakeSet) =>
    s.type === "bitmap:port" ? "range 0-65535" : `family ${s.family} hashsize 1024 maxelem 65536`;

  const save = (): string => {
    const out: string[] = [];
    for (const [name, s] of sets) {
      out.push(`create ${name} ${s.type} ${header(s)}`);
      for (const m of s.members) out.push(`add ${name} ${m}`);
    }
    return out.map((l) => l + "\n").join("");
  };

  const list = (names: readonly string[]): string =>
    names.map((name) => {
      const s = sets.get(name)!;
      return [
        `Name: ${name}`,
        `Type: ${s.type}`,
        "Revision: 1",
        `Header: ${header(s)}`,
        "Size in memory: 1024",
        `References: ${referenced.has(name) ? 1 : 0}`,
        `Number of entries: ${s.members.size}`,
        "Members:",
        ...s.members,
      ].join("\n") + "\n";
    }).join("\n");

  const run: CommandRunner = (input) => {
    calls.push(input);
    if (input.cmd !== "ipset") return Promise.resolve(fail(`${input.cmd}: not faked`));
    const a = input.args;
    if (a[0] === "--version" || a[0] === "version") {
      return Promise.resolve(ok("ipset v7.17, protocol version: 7\n"));
    }
    if (a[0] === "save") return Promise.resolve(ok(save()));
    if (a[0] === "list") {
      if (a[1] === "-n") return Promise.resolve(ok([...sets.keys()].map((n) => n + "\n").join("")));
      if (a[1] !== undefined) {
        if (!sets.has(a[1])) {
          return Promise.resolve(fail("The set with the given name does not exist"));
        }
        return Promise.resolve(ok(list([a[1]])));
      }
      return Promise.resolve(ok(list([...sets.keys()])));
    }
    if (a[0] === "restore") {
      let n = 0;
      for (const raw of (input.stdin ?? "").split("\n")) {
        n++;
        const line = raw.trim();
        if (line === "" || line === "COMMIT") continue;
        const err = apply(line.split(/\s+/));
        if (err !== null) return Promise.resolve(fail(`ipset v7.17: Error in line ${n}: ${err}`));
      }
      return Promise.resolve(ok());
    }
    const err = apply(a);
    return Promise.resolve(err === null ? ok() : fail(`ipset v7.17: ${err}`));
  };

  return {
    run,
    calls,
    sets,
    referenced,
    members: (name) => [...(sets.get(name)?.members ?? [])].sort(),
  };
}
