/**
 * Removing IPVS mode's leftovers when another mode has taken over (and iptables mode's, when
 * IPVS mode has): unlike `--cleanup`, which flushes every virtual server as upstream does, only
 * what IPVS mode made goes, and the flows IPVS carried are handed to the running mode.
 *
 * A virtual server is IPVS mode's when its address is on kube-ipvs0 (ClusterIPs, and external
 * and load-balancer IPs that no other interface holds: IPVS mode binds them there and nothing
 * else uses that device) or when one of IPVS mode's ipsets names it: `ip,proto:port` in a
 * `hash:ip,port` set (cluster, external and load-balancer IPs, SCTP NodePorts), or its port in a
 * NodePort `bitmap:port` set of its protocol (TCP/UDP NodePorts, one virtual server per node
 * IP). Any other virtual server belongs to another agent and stays.
 *
 * A flow IPVS carried has a conntrack entry that netfilter did not NAT (IPVS rewrote its
 * packets and only the entry's reply tuple), so no rule of the running mode ever applies to it:
 * once the virtual server and kube-ipvs0 are gone its packets would be routed to the service
 * address as it is and lost, the entry kept alive by the very packets it loses. So the entries
 * of the connections IPVS lists (`ipvsadm -Lnc`) for those virtual servers are deleted first,
 * while IPVS still serves them; the flow's next packet makes a new entry, which the running
 * mode's rules DNAT (to an endpoint of the same service, not necessarily the same one).
 * What no step here prevents: when IPVS drops one of its connection entries (as it does for
 * all of a deleted virtual server's), the kernel deletes the conntrack entry with the same
 * addresses and ports, even one of a newer connection from the same client port that the
 * running mode DNATed (lib/backends/modes.ts, leftoverModes).
 */
import { COMMAND_NOT_FOUND, CommandError, type CommandRunner } from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";
import { ipFamily } from "../../net/mod.ts";
import type { Protocol } from "../../proxy/mod.ts";
import {
  cleanupIptables,
  IPTABLES_JUMP_CHAINS,
  IPTABLES_MODE_CHAINS,
  isCleanupChain,
  type JumpRule,
  type KeptIptablesState,
} from "../../netfilter/mod.ts";
import {
  deleteIpvsDevice,
  destroyIpsets,
  KUBE_IPVS_DEVICE,
  parseIpsetNames,
  parseLinkNames,
} from "./cleanup.ts";
import { KUBE_IPSET_NAMES } from "./_ipset_names.ts";
import { parseIpsetSave } from "./_ipset_parser.ts";
import { parseIpvsadmSave, splitHostPort } from "./ipvsadm_parser.ts";
import { parseLinkAddresses } from "./_link_addresses.ts";
import { IPVS_FILTER_CHAINS, IPVS_JUMP_CHAINS, IPVS_NAT_CHAINS } from "./render_iptables.ts";
import { deleteVirtualServerLine, type VirtualServer, virtualServerKey } from "./virtual_server.ts";

const sameJump = (a: JumpRule, b: JumpRule) =>
  a.table === b.table && a.srcChain === b.srcChain && a.dstChain === b.dstChain &&
  a.comment === b.comment;

/** `from`'s jumps into our chains that `own` does not make. */
function otherJumps(from: readonly JumpRule[], own: readonly JumpRule[]): JumpRule[] {
  return from.filter((j) => isCleanupChain(j.dstChain) && !own.some((o) => sameJump(j, o)));
}

/** What IPVS mode keeps of the iptables state when it removes iptables mode's leftovers. */
export const IPVS_MODE_KEPT_IPTABLES: KeptIptablesState = {
  chains: { nat: IPVS_NAT_CHAINS, filter: IPVS_FILTER_CHAINS },
  servicePrefixes: false,
  staleJumps: otherJumps(IPTABLES_JUMP_CHAINS, IPVS_JUMP_CHAINS),
};

/** What iptables mode keeps of the iptables state when it removes IPVS mode's leftovers. */
export const IPTABLES_MODE_KEPT_IPTABLES: KeptIptablesState = {
  chains: IPTABLES_MODE_CHAINS,
  servicePrefixes: true,
  staleJumps: otherJumps(IPVS_JUMP_CHAINS, IPTABLES_JUMP_CHAINS),
};

/** One IPVS connection entry (`ipvsadm -Lnc`): who, to which virtual server. */
export interface IpvsConnection {
  readonly protocol: Protocol;
  readonly client: string;
  readonly clientPort: number;
  readonly virtual: string;
  readonly virtualPort: number;
}

const CONN_PROTOCOLS: Readonly<Record<string, Protocol>> = {
  TCP: "TCP",
  UDP: "UDP",
  SCTP: "SCTP",
};

/** TCP states of an IPVS connection whose flow is over (`ipvsadm -Lnc`'s state column). */
const ENDED_TCP_STATES: ReadonlySet<string> = new Set(["TIME_WAIT", "CLOSE"]);

/**
 * Parses `ipvsadm -Lnc`; persistence templates (client port 0) and lines it cannot read are
 * left out: they have no conntrack entry of their own. So are TCP connections that have
 * ended (TIME_WAIT, CLOSE): their flow will send nothing more, and a new connection on the
 * same ports gets a new conntrack entry anyway. Each connection listed costs `conntrack -D` a
 * walk of the table, and closed connections are most of what busy services leave listed.
 */
export function parseIpvsConnections(text: string): IpvsConnection[] {
  const out: IpvsConnection[] = [];
  for (const line of text.split("\n")) {
    const [pro, , state, source, virtual] = line.trim().split(/\s+/);
    const protocol = CONN_PROTOCOLS[pro ?? ""];
    const c = splitHostPort(source ?? ""), v = splitHostPort(virtual ?? "");
    if (protocol === undefined || c === null || v === null || c.port === 0) continue;
    if (protocol === "TCP" && ENDED_TCP_STATES.has(state ?? "")) continue;
    out.push({
      protocol,
      client: c.address,
      clientPort: c.port,
      virtual: v.address,
      virtualPort: v.port,
    });
  }
  return out;
}

/** What the node says IPVS mode owns: kube-ipvs0's addresses and its ipsets' members. */
export interface IpvsOwnership {
  readonly bound: ReadonlySet<string>;
  /** `ip,proto:port` members of IPVS mode's hash:ip,port sets. */
  readonly ipPorts: ReadonlySet<string>;
  /** `proto:port` of the NodePort bitmap sets. */
  readonly nodePorts: ReadonlySet<string>;
}

/** Reads IPVS mode's ownership from `ip -j addr show` and `ipset save` output. */
export function parseIpvsOwnership(addrJson: string, ipsetSave: string): IpvsOwnership {
  const bound = new Set([
    ...parseLinkAddresses(addrJson, "IPv4").bound,
    ...parseLinkAddresses(addrJson, "IPv6").bound,
  ]);
  const ipPorts = new Set<string>(), nodePorts = new Set<string>();
  for (const [name, set] of parseIpsetSave(ipsetSave)) {
    if (!KUBE_IPSET_NAMES.has(name)) continue;
    if (set.type === "hash:ip,port") { for (const m of set.members) ipPorts.add(m); }
    const proto = /-(TCP|UDP)$/.exec(name)?.[1]?.toLowerCase();
    if (set.type === "bitmap:port" && proto !== undefined) {
      for (const m of set.members) nodePorts.add(`${proto}:${m}`);
    }
  }
  return { bound, ipPorts, nodePorts };
}

/** True for a virtual server IPVS mode made (see the file comment). */
export function ownedByIpvsMode(
  vs: Pick<VirtualServer, "address" | "port" | "protocol">,
  owned: IpvsOwnership,
): boolean {
  const proto = vs.protocol.toLowerCase();
  return owned.bound.has(vs.address) || owned.ipPorts.has(`${vs.address},${proto}:${vs.port}`) ||
    owned.nodePorts.has(`${proto}:${vs.port}`);
}

/** The `conntrack -R` lines deleting the entries of these IPVS connections, one flow each. */
export function connectionDeleteLines(conns: readonly IpvsConnection[]): string[] {
  return [
    ...new Set(conns.map((c) => {
      const f = ipFamily(c.client) === "IPv6" ? "ipv6" : "ipv4";
      return `-D -f ${f} -p ${c.protocol.toLowerCase()} --orig-src ${c.client} ` +
        `--orig-dst ${c.virtual} --orig-port-src ${c.clientPort} --orig-port-dst ${c.virtualPort}`;
    })),
  ];
}

async function read(runner: CommandRunner, cmd: string, args: string[]) {
  const out = await runner({ cmd, args });
  return out.code === 0 ? out.stdout : null;
}

/**
 * Hands IPVS mode's flows to the running mode and deletes IPVS mode's virtual servers; without
 * IPVS or ipvsadm there is nothing to do. Returns the first failure.
 */
async function removeVirtualServers(runner: CommandRunner, logger: Logger): Promise<Error | null> {
  const saved = await runner({ cmd: "ipvsadm", args: ["-Sn"] });
  if (saved.code !== 0) {
    logger.debug(2, "IPVS not available, no virtual servers to clean up", {
      reason: saved.code === COMMAND_NOT_FOUND ? "ipvsadm not found" : saved.stderr.trim(),
    });
    return null;
  }
  const owned = parseIpvsOwnership(
    (await read(runner, "ip", ["-j", "addr", "show"])) ?? "[]",
    (await read(runner, "ipset", ["save"])) ?? "",
  );
  const doomed = [...parseIpvsadmSave(saved.stdout).table.values()].map((s) => s.vs)
    .filter((vs) => ownedByIpvsMode(vs, owned));
  if (doomed.length === 0) return null;
  const keys = new Set(doomed.map(virtualServerKey));
  const conns = parseIpvsConnections((await read(runner, "ipvsadm", ["-Lnc"])) ?? "")
    .filter((c) =>
      keys.has(virtualServerKey({ address: c.virtual, port: c.virtualPort, protocol: c.protocol }))
    );
  if (conns.length > 0) {
    const out = await runner({
      cmd: "conntrack",
      args: ["-R", "-"],
      stdin: connectionDeleteLines(conns).join("\n") + "\n",
    });
    // A flow that ended since the listing has no entry to delete: not worth more than a warning.
    if (out.code !== 0) {
      logger.warn("Could not delete the conntrack entries of every IPVS connection", {
        code: out.code,
        stderr: out.stderr.trim(),
      });
    }
  }
  const args = ["-R"];
  const out = await runner({
    cmd: "ipvsadm",
    args,
    stdin: doomed.map((vs) => deleteVirtualServerLine(vs) + "\n").join(""),
  });
  if (out.code !== 0) {
    logger.error("Error deleting IPVS virtual servers", { stderr: out.stderr.trim() });
    return new CommandError("ipvsadm", args, out.code, out.stderr);
  }
  logger.info("Deleted IPVS virtual servers", {
    virtualServers: doomed.length,
    connections: conns.length,
  });
  return null;
}

/**
 * Whether IPVS mode may have left anything, from the node's links and ipsets (null: they could
 * not be listed). IPVS mode makes kube-ipvs0 and its ipsets before any rule or virtual server;
 * its rules match on those sets, and the kernel refuses to destroy a set a rule still uses, so
 * every cleanup (upstream's and ours) removes the rules first; and a virtual server is IPVS
 * mode's only by its address on the device or in a set (ownedByIpvsMode). So with neither the
 * device nor one of its sets on the node, IPVS mode left nothing, and the running mode need not
 * read every table (its own service chains with them: the whole nat table) to look for it.
 */
export function mayHoldIpvsState(
  links: readonly string[] | null,
  ipsets: readonly string[] | null,
): boolean {
  if (links === null || ipsets === null) return true;
  return links.includes(KUBE_IPVS_DEVICE) || ipsets.some((n) => KUBE_IPSET_NAMES.has(n));
}

/** The node's link and ipset names; null for a list that failed or could not be read. */
async function ipvsTraces(runner: CommandRunner): Promise<[string[] | null, string[] | null]> {
  const names = async (cmd: string, args: string[], parse: (out: string) => string[]) => {
    const out = await runner({ cmd, args });
    if (out.code !== 0) return null;
    try {
      return parse(out.stdout);
    } catch {
      return null; // unreadable: counted as "may have left something", so every step runs
    }
  };
  return [
    await names("ip", ["-j", "link", "show"], parseLinkNames),
    await names("ipset", ["list", "-n"], parseIpsetNames),
  ];
}

/**
 * Removes IPVS mode's leftovers for the running mode, where it may have left any
 * (mayHoldIpvsState): with `keep` (iptables mode), first the iptables chains and jumps of IPVS
 * mode the running mode does not write, so that no rule references the ipsets; then IPVS mode's
 * virtual servers (its flows handed over first), the kube-ipvs0 device and its ipsets. Every
 * step is tried; the first failure is thrown.
 */
export async function removeIpvsModeLeftovers(
  runner: CommandRunner,
  logger: Logger = silentLogger,
  keep?: KeptIptablesState,
): Promise<void> {
  if (!mayHoldIpvsState(...await ipvsTraces(runner))) {
    logger.debug(2, "Neither kube-ipvs0 nor an IPVS mode ipset is here: no IPVS mode leftovers");
    return;
  }
  let first: Error | null = null;
  if (keep !== undefined) {
    await cleanupIptables(runner, logger, keep).catch((err: Error) => {
      first = err;
    });
  }
  for (const step of [removeVirtualServers, deleteIpvsDevice, destroyIpsets]) {
    first ??= await step(runner, logger);
  }
  if (first !== null) throw first;
}

/** Iptables mode's removal of IPVS mode's leftovers. */
export function removeIpvsLeftoversForIptablesMode(
  runner: CommandRunner,
  logger: Logger = silentLogger,
): Promise<void> {
  return removeIpvsModeLeftovers(runner, logger, IPTABLES_MODE_KEPT_IPTABLES);
}

/**
 * IPVS mode's removal of iptables mode's leftovers: the per-service chains and iptables mode's
 * other chains and jumps IPVS mode does not write; the chains both write were rewritten whole
 * by IPVS mode's own restore.
 */
export function removeIptablesLeftoversForIpvsMode(
  runner: CommandRunner,
  logger: Logger = silentLogger,
): Promise<void> {
  return cleanupIptables(runner, logger, IPVS_MODE_KEPT_IPTABLES);
}
