/**
 * A state-holding fake of the netadmin binaries besides iptables (see fake_iptables.ts), for
 * tests that must not need root. It keeps nftables tables, ipsets, network links and IPVS
 * virtual servers, and understands:
 * - `nft list tables`, `nft list chains FAMILY`, `nft add table FAMILY NAME`,
 *   `nft delete table FAMILY NAME`, and `nft -f -` of such add/delete lines (atomic: one bad
 *   line and nothing changes)
 * - `ipset list -n`, `ipset create NAME TYPE ...`, `ipset destroy NAME`
 * - `ip -j link show`, `ip link add NAME type TYPE`, `ip link del NAME`
 * - `ipvsadm -L -n`, `ipvsadm -A -t|-u ADDR:PORT [-s SCHED]`, `ipvsadm --clear` / `-C`
 * Like the real tools, it refuses to delete what is missing, a table another process owns
 * (`flags owner`), and a set that a kernel component (an iptables rule) still references;
 * without IPVS every ipvsadm call fails.
 */
import type { CommandInput, CommandOutput, CommandRunner } from "../../lib/exec/mod.ts";

/** One ipset: its type and how many kernel references (iptables rules) hold it. */
export interface FakeIpset {
  type: string;
  references: number;
}

/** Options for createFakeNetadmin. */
export interface FakeNetadminOptions {
  /** Binaries that are "not installed" (exit 127). */
  readonly missing?: readonly ("nft" | "ipset" | "ip" | "ipvsadm")[];
  /** Whether the kernel has IPVS; default true. */
  readonly ipvs?: boolean;
  /** Whether the kernel has nf_tables; default true (without it every nft call fails). */
  readonly nftables?: boolean;
}

/** The fake: a CommandRunner plus its state, to seed and to inspect. */
export interface FakeNetadmin {
  readonly run: CommandRunner;
  /** Every command run, for the thin layer that cares about argument spelling. */
  readonly calls: CommandInput[];
  /** nftables tables as `FAMILY NAME` (e.g. `ip kube-proxy`), each with its chain names. */
  readonly nftTables: Map<string, Set<string>>;
  /** Keys of nftTables that another process owns, so deleting them is not permitted. */
  readonly nftOwnedTables: Set<string>;
  /** ipsets by name. */
  readonly ipsets: Map<string, FakeIpset>;
  /** Network links by name, with their link type. */
  readonly links: Map<string, string>;
  /** IPVS virtual servers as `-t ADDR:PORT` (empty, and unusable, without IPVS). */
  readonly virtualServers: Set<string>;
}

const ok = (stdout = ""): CommandOutput => ({ code: 0, stdout, stderr: "" });
const fail = (code: number, stderr: string): CommandOutput => ({ code, stdout: "", stderr });

/** Creates a fake with only the loopback link and nothing else. */
export function createFakeNetadmin(options: FakeNetadminOptions = {}): FakeNetadmin {
  const hasIpvs = options.ipvs ?? true;
  const calls: CommandInput[] = [];
  const nftTables = new Map<string, Set<string>>();
  const nftOwnedTables = new Set<string>();
  const ipsets = new Map<string, FakeIpset>();
  const links = new Map<string, string>([["lo", "loopback"]]);
  const virtualServers = new Set<string>();

  /** One `add|delete table FAMILY NAME` against `tables`; an error text, or null. */
  const tableCommand = (tables: Map<string, Set<string>>, words: readonly string[]) => {
    const [verb, what, family, name] = words;
    if (what !== "table" || family === undefined || name === undefined || words.length !== 4) {
      return `Error: syntax error in "nft ${words.join(" ")}"\n`;
    }
    const key = `${family} ${name}`;
    if (verb === "add") {
      if (nftOwnedTables.has(key) && tables.has(key)) {
        return "Error: Could not process rule: Operation not permitted\n";
      }
      if (!tables.has(key)) tables.set(key, new Set());
      return null;
    }
    if (verb === "delete") {
      if (nftOwnedTables.has(key)) {
        return "Error: Could not process rule: Operation not permitted\n";
      }
      if (!tables.delete(key)) return "Error: Could not process rule: No such file or directory\n";
      return null;
    }
    return `Error: unknown command "${verb}"\n`;
  };

  const nft = (args: readonly string[], stdin: string | undefined): CommandOutput => {
    if (options.nftables === false) {
      return fail(1, "Error: Could not process rule: Operation not supported\n");
    }
    const [verb, what, family] = args;
    if (verb === "list" && what === "tables" && args.length === 2) {
      return ok([...nftTables.keys()].map((k) => `table ${k}\n`).join(""));
    }
    if (verb === "list" && what === "chains" && family !== undefined && args.length === 3) {
      const out: string[] = [];
      for (const [key, chains] of nftTables) {
        if (!key.startsWith(`${family} `)) continue;
        out.push(`table ${key} {`, ...[...chains].map((c) => `\tchain ${c} {\n\t}`), "}");
      }
      return ok(out.map((l) => l + "\n").join(""));
    }
    if (verb === "-f" && what === "-" && args.length === 2) {
      const next = new Map(nftTables);
      for (const line of (stdin ?? "").split("\n")) {
        if (line.trim() === "") continue;
        const err = tableCommand(next, line.trim().split(/\s+/));
        if (err !== null) return fail(1, err);
      }
      nftTables.clear();
      for (const [k, v] of next) nftTables.set(k, v);
      return ok();
    }
    const err = tableCommand(nftTables, args);
    return err === null ? ok() : fail(1, err);
  };

  const ipset = (args: readonly string[]): CommandOutput => {
    const [verb, name, type] = args;
    if (verb === "list" && name === "-n") {
      return ok([...ipsets.keys()].map((n) => `${n}\n`).join(""));
    }
    if (verb === "create" && name !== undefined && type !== undefined) {
      if (ipsets.has(name)) {
        return fail(
          1,
          "ipset v7.17: Set cannot be created: set with the same name already exists\n",
        );
      }
      ipsets.set(name, { type, references: 0 });
      return ok();
    }
    if (verb === "destroy" && name !== undefined) {
      const set = ipsets.get(name);
      if (set === undefined) {
        return fail(1, "ipset v7.17: The set with the given name does not exist\n");
      }
      if (set.references > 0) {
        return fail(
          1,
          "ipset v7.17: Set cannot be destroyed: it is in use by a kernel component\n",
        );
      }
      ipsets.delete(name);
      return ok();
    }
    return fail(1, `ipset v7.17: Unknown command "${args.join(" ")}"\n`);
  };

  const ip = (args: readonly string[]): CommandOutput => {
    const line = args.join(" ");
    if (line === "-j link show") {
      const json = [...links].map(([ifname, type], i) => ({
        ifindex: i + 1,
        ifname,
        link_type: type,
      }));
      return ok(JSON.stringify(json) + "\n");
    }
    const add = /^link add (\S+) type (\S+)$/.exec(line);
    if (add) {
      if (links.has(add[1]!)) return fail(2, "RTNETLINK answers: File exists\n");
      links.set(add[1]!, add[2]!);
      return ok();
    }
    const del = /^link del(?:ete)? (?:dev )?(\S+)$/.exec(line);
    if (del) {
      if (!links.delete(del[1]!)) return fail(1, `Cannot find device "${del[1]}"\n`);
      return ok();
    }
    return fail(1, `Command "${line}" is unknown, try "ip help".\n`);
  };

  const ipvsadm = (args: readonly string[]): CommandOutput => {
    if (!hasIpvs) {
      return fail(2, "Can't initialize ipvs: Protocol not available\n");
    }
    const line = args.join(" ");
    if (line === "-L -n") {
      const header = "IP Virtual Server version 1.2.1 (size=4096)\n" +
        "Prot LocalAddress:Port Scheduler Flags\n";
      const rows = [...virtualServers].map((v) =>
        `${v.startsWith("-t") ? "TCP" : "UDP"}  ${v.slice(3)} rr\n`
      );
      return ok(header + rows.join(""));
    }
    if (line === "--clear" || line === "-C") {
      virtualServers.clear();
      return ok();
    }
    const add = /^-A (-[tu]) (\S+)(?: -s \S+)?$/.exec(line);
    if (add) {
      virtualServers.add(`${add[1]} ${add[2]}`);
      return ok();
    }
    return fail(2, `ipvsadm: unknown arguments "${line}"\n`);
  };

  const tools: Record<string, (args: readonly string[], stdin?: string) => CommandOutput> = {
    nft,
    ipset,
    ip,
    ipvsadm,
  };

  const run: CommandRunner = (input) => {
    calls.push(input);
    const tool = tools[input.cmd];
    if (tool === undefined || options.missing?.includes(input.cmd as "nft")) {
      return Promise.resolve(fail(127, `${input.cmd}: command not found`));
    }
    return Promise.resolve(tool(input.args, input.stdin));
  };

  return { run, calls, nftTables, nftOwnedTables, ipsets, links, virtualServers };
}
