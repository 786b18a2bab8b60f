/**
 * A state-holding fake of `ip` for links and their addresses, for the IPVS tests. It holds
 * links (type and `ip/prefix` addresses) and understands `ip -j [-4|-6] addr show`,
 * `ip -o addr show dev NAME`, `ip -j link show`, `ip link add NAME type TYPE`,
 * `ip link del NAME`, and
 * `ip [-force] -batch -` with `addr add|del IP/PREFIX dev NAME` lines. Like the real tool it
 * refuses a link or address that exists already, and removing what is missing; with
 * `-force` a batch goes on past errors and exits 1 at the end.
 */
import type { CommandInput, CommandOutput, CommandRunner } from "../../lib/exec/mod.ts";

/** One link. */
export interface FakeLink {
  type: string;
  addrs: string[];
}

/** The fake: a CommandRunner plus its links. */
export interface FakeIpAddr {
  readonly run: CommandRunner;
  readonly calls: CommandInput[];
  readonly links: Map<string, FakeLink>;
  /** The bare addresses on one link. */
  addresses(link: string): string[];
}

/** Creates a fake with `lo` (127.0.0.1/8, ::1/128) and `eth0` holding `eth0Addrs`. */
export function createFakeIpAddr(eth0Addrs: readonly string[] = ["192.168.0.2/24"]): FakeIpAddr {
  const calls: CommandInput[] = [];
  const links = new Map<string, FakeLink>([
    ["lo", { type: "loopback", addrs: ["127.0.0.1/8", "::1/128"] }],
    ["eth0", { type: "ether", addrs: [...eth0Addrs] }],
  ]);
  const ok = (stdout = ""): CommandOutput => ({ code: 0, stdout, stderr: "" });
  const fail = (code: number, stderr: string): CommandOutput => ({ code, stdout: "", stderr });

  const addrCmd = (words: readonly string[]): string | null => {
    const [verb, addr, dev, name] = words;
    if ((verb !== "add" && verb !== "del") || addr === undefined || dev !== "dev") {
      return `Command line is not complete`;
    }
    if (!/^[0-9a-f.:]+\/\d{1,3}$/.test(addr)) {
      return `Error: any valid prefix is expected rather than "${addr}"`;
    }
    const link = name === undefined ? undefined : links.get(name);
    if (link === undefined) return `Cannot find device "${name}"`;
    const i = link.addrs.indexOf(addr);
    if (verb === "add") {
      if (i !== -1) return "RTNETLINK answers: File exists";
      link.addrs.push(addr);
    } else {
      if (i === -1) return "RTNETLINK answers: Cannot assign requested address";
      link.addrs.splice(i, 1);
    }
    return null;
  };

  const run: CommandRunner = (input) => {
    calls.push(input);
    if (input.cmd !== "ip") return Promise.resolve(fail(127, `${input.cmd}: not faked`));
    const a = input.args.filter((w) => w !== "-j" && w !== "-json");
    const fam = a[0] === "-4" ? "4" : a[0] === "-6" ? "6" : "";
    const rest = fam === "" ? a : a.slice(1);
    const json = input.args.includes("-j") || input.args.includes("-json");
    if (json && rest[0] === "addr" && rest[1] === "show") {
      // Like iproute2, `-4`/`-6` leaves out links without an address of that family.
      const out = [...links].map(([ifname, l]) => ({
        ifname,
        addr_info: l.addrs
          .filter((x) => fam === "" || (fam === "6") === x.includes(":"))
          .map((x) => ({ local: x.split("/")[0], prefixlen: Number(x.split("/")[1]) })),
      })).filter((l) => fam === "" || l.addr_info.length > 0);
      return Promise.resolve(ok(JSON.stringify(out)));
    }
    if (
      !json && rest[0] === "-o" && rest[1] === "addr" && rest[2] === "show" && rest[3] === "dev"
    ) {
      // One line per address, as `ip -o addr show dev NAME` prints them.
      const name = rest[4] ?? "";
      const link = links.get(name);
      if (link === undefined) return Promise.resolve(fail(1, `Device "${name}" does not exist.\n`));
      const lines = link.addrs.map((x) =>
        `7: ${name}    ${
          x.includes(":") ? "inet6" : "inet"
        } ${x} scope global ${name}\\       valid_lft forever preferred_lft forever\n`
      );
      return Promise.resolve(ok(lines.join("")));
    }
    if (json && rest[0] === "link" && rest[1] === "show") {
      return Promise.resolve(ok(JSON.stringify([...links.keys()].map((ifname) => ({ ifname })))));
    }
    if (rest[0] === "link" && rest[1] === "add" && rest[3] === "type" && rest[2] !== undefined) {
      if (links.has(rest[2])) return Promise.resolve(fail(2, "RTNETLINK answers: File exists"));
      links.set(rest[2], { type: rest[4] ?? "", addrs: [] });
      return Promise.resolve(ok());
    }
    if (rest[0] === "link" && rest[1] === "del" && rest[2] !== undefined) {
      if (!links.delete(rest[2])) {
        return Promise.resolve(fail(1, `Cannot find device "${rest[2]}"`));
      }
      return Promise.resolve(ok());
    }
    const force = rest[0] === "-force";
    const batch = force ? rest.slice(1) : rest;
    if (batch[0] === "-batch" && batch[1] === "-") {
      const errors: string[] = [];
      for (const raw of (input.stdin ?? "").split("\n")) {
        const words = raw.trim().split(/\s+/).filter((w) => w !== "");
        if (words.length === 0) continue;
        const err = words[0] === "addr" ? addrCmd(words.slice(1)) : `Unknown command "${raw}"`;
        if (err === null) continue;
        errors.push(err);
        if (!force) break;
      }
      return Promise.resolve(errors.length === 0 ? ok() : fail(1, errors.join("\n") + "\n"));
    }
    return Promise.resolve(fail(255, `Object "${input.args.join(" ")}" is unknown`));
  };

  return {
    run,
    calls,
    links,
    addresses: (link) => (links.get(link)?.addrs ?? []).map((x) => x.split("/")[0]!),
  };
}
