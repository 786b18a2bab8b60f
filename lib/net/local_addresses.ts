/**
 * The addresses on this node's interfaces, which --nodeport-addresses CIDRs select from (as
 * upstream's NodePortAddresses.GetNodeIPs reads the interfaces on every sync).
 */
import { CommandError, type CommandRunner } from "../exec/mod.ts";
import { canonicalIP, type IPFamily, ipFamily } from "./ip.ts";

/** Lists the addresses of one family on every interface of this node. */
export type LocalAddressLister = (family: IPFamily) => Promise<readonly string[]>;

/** Picks the addresses of `family` out of `ip -json addr show` output; bad entries are skipped. */
export function parseIpAddrJson(text: string, family: IPFamily): string[] {
  const links: unknown = JSON.parse(text);
  if (!Array.isArray(links)) {
    throw new SyntaxError(`Invalid "ip -json addr show" output: expected a JSON array`);
  }
  const out: string[] = [];
  for (const link of links) {
    const infos = (link as { addr_info?: unknown })?.addr_info;
    if (!Array.isArray(infos)) continue;
    for (const info of infos) {
      const local = (info as { local?: unknown })?.local;
      const ip = typeof local === "string" ? canonicalIP(local) : null;
      if (ip !== null && ipFamily(ip) === family && !out.includes(ip)) out.push(ip);
    }
  }
  return out;
}

/** The real lister: runs `ip -json addr show` through the command seam. */
export function ipCommandAddressLister(runner: CommandRunner): LocalAddressLister {
  return async (family) => {
    const args = ["-json", family === "IPv4" ? "-4" : "-6", "addr", "show"];
    const out = await runner({ cmd: "ip", args });
    if (out.code !== 0) throw new CommandError("ip", args, out.code, out.stderr);
    return parseIpAddrJson(out.stdout, family);
  };
}
