/**
 * The one map of proxy modes, and which modes' leftovers each mode removes at start. Modes are
 * picked here by name, never registered by import side effects: one entry per mode, the mode
 * object its folder's face (lib/backends/<mode>/mod.ts) exports. A face carries the mode's
 * name and config section and loads the rest on first use: a node runs one mode, so the other
 * two (their renderers, proxiers and parsers) stay unloaded, and removing a mode's leftovers
 * loads only that mode's cleanup. Every start validates the configuration, with every mode's
 * config section, before any mode is loaded.
 */
import type { ModeConfigSections } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import { iptablesMode } from "./iptables/mod.ts";
import { ipvsMode } from "./ipvs/mod.ts";
import type { ModeCleanup, ModeDefinition, ProxyMode, ProxyModeName } from "./mode.ts";
import { nftablesMode } from "./nftables/mod.ts";

const MODES: { readonly [M in ProxyModeName]: ProxyMode<M> } = {
  iptables: iptablesMode,
  ipvs: ipvsMode,
  nftables: nftablesMode,
};

/** Each mode's config section, which lib/config's parsing and validation take as options. */
export const MODE_CONFIG_SECTIONS: ModeConfigSections = {
  iptables: MODES.iptables.configSection,
  ipvs: MODES.ipvs.configSection,
  nftables: MODES.nftables.configSection,
};

/** Every mode `--proxy-mode` can name: the registry's keys. */
export const PROXY_MODE_NAMES = Object.keys(MODES) as readonly ProxyModeName[];

/** The mode `--proxy-mode` names, its module loaded on first use. */
export function loadMode(name: ProxyModeName): Promise<ModeDefinition> {
  return MODES[name].load();
}

/**
 * The order `--cleanup` removes every mode's state in: iptables first, because an ipset (IPVS
 * mode) cannot be destroyed while an iptables rule still references it.
 */
export const CLEANUP_ORDER: readonly ProxyModeName[] = ["iptables", "nftables", "ipvs"];

/**
 * How `running` removes `other`'s leftovers. nftables mode removes iptables and IPVS state,
 * iptables and ipvs modes the nftables tables, as upstream 1.29+ does; unlike upstream, iptables
 * and ipvs modes also remove each other's state, keeping what both write (IPVS mode programs
 * iptables too: the shared top-level chains are rewritten whole by the running mode's own
 * restore). A mode's cleanup is the way unless the running mode says otherwise
 * (removesLeftoversOf) or the other mode does (leftoversWhen): IPVS state goes only where IPVS
 * mode made it, its flows handed over first (lib/backends/ipvs/leftovers.ts).
 */
function leftoverCleanup(running: ProxyModeName, other: ProxyModeName): ModeCleanup {
  return MODES[running].removesLeftoversOf?.[other] ?? MODES[other].leftoversWhen?.[running] ??
    MODES[other].cleanup;
}

/**
 * The modes whose leftovers starting in `mode` removes, in CLEANUP_ORDER: every other mode.
 *
 * The app removes them only after its own first sync is in the kernel, so for a while both
 * rule sets are there, routing the same services to the same endpoints. Why that is safe:
 * - Every NAT chain here is a NAT-type chain (iptables' nat table, legacy or nft, hooks at
 *   dstnat -100 and srcnat 100; nftables mode's `nat-*` chains at the same priorities). The
 *   kernel's NAT core runs the NAT chains of a hook only for a connection's first packet, in
 *   priority order, and stops at the first that sets up a binding. So a new connection is
 *   DNATed once, by whichever set comes first, to an endpoint of the right service; the
 *   masquerade mark that set's service chain puts on the packet is the same bit in every mode
 *   (`masqueradeBit`), so whichever POSTROUTING chain comes first masquerades it, once.
 * - Established connections run no NAT chain at all: their conntrack entries keep the
 *   binding they were given, whichever set gave it, and deleting the old chains or table does
 *   not touch conntrack. Nothing flushes conntrack at start; the stale-UDP cleanup only
 *   deletes flows to endpoints that are gone.
 * - Filter chains of both sets see every packet, and for the same cluster state both let the
 *   same traffic through and reject the same (services without endpoints). nftables mode's
 *   extra rules (invalid ClusterIP ports, unallocated ServiceCIDR addresses) only hit traffic
 *   that iptables mode routes nowhere either.
 * - IPVS with iptables or nftables mode: IPVS handles packets after routing delivers them
 *   locally (service addresses sit on `kube-ipvs0`), at LOCAL_IN and at LOCAL_OUT priority
 *   -98; the other mode's DNAT at -100 comes first and sends a new connection to a pod, which
 *   IPVS never sees. So while both are there, any DNAT rule of the other mode wins: to IPVS
 *   mode (iptables or nftables first) new connections keep being DNATed by the old rules
 *   until IPVS mode's restore replaces the shared nat chains (iptables: KUBE-SERVICES,
 *   KUBE-POSTROUTING, KUBE-MARK-MASQ, rewritten whole in one transaction) or the nftables
 *   table goes; from IPVS mode, the running mode's first sync takes new connections away from
 *   IPVS at once. Connections the old rules DNATed keep their binding and never reach IPVS.
 * - Connections IPVS carried are the one case that does not carry over: their conntrack
 *   entries have no NAT binding (IPVS rewrote the packets itself), so no rule of the new
 *   mode applies to them, and without IPVS their packets would be lost. The removal of IPVS
 *   state deletes those entries (as IPVS lists them) before the virtual servers, so the next
 *   packet of each flow starts a new entry the new mode DNATs, and a UDP flow goes on under a
 *   new entry; a TCP connection IPVS carried goes on only if that DNAT picks its endpoint.
 * - What no order avoids when leaving IPVS mode: IPVS keeps an entry of its own for each
 *   connection it carried (a TCP one's for 2 minutes after it ends) and, with
 *   `net.ipv4.vs.conntrack` on (IPVS mode sets it), deletes the conntrack entry with the same
 *   addresses and ports when that entry goes, whether it ages out or its virtual server is
 *   deleted. A client that has meanwhile reused the source port for a new connection, which
 *   the new mode DNATed, loses that connection's entry then, and with it the connection.
 *   Nothing in userspace removes an IPVS entry without that deletion or keeps new connections
 *   off an old entry's addresses and ports; upstream, which leaves IPVS state to age out, has
 *   the same.
 */
export function leftoverModes(mode: ProxyModeName): ProxyModeName[] {
  return CLEANUP_ORDER.filter((m) => m !== mode);
}

/**
 * Runs the cleanup of each of `names` in turn. Every mode is tried; returns the modes that left
 * something behind (each failure logged).
 */
async function runCleanups(
  names: readonly ProxyModeName[],
  cleanupOf: (name: ProxyModeName) => ModeCleanup,
  runner: CommandRunner,
  logger: Logger,
): Promise<ProxyModeName[]> {
  const failed: ProxyModeName[] = [];
  for (const name of names) {
    try {
      await cleanupOf(name)(runner, logger);
      logger.debug(2, "Cleaned up leftover state", { mode: name });
    } catch (err) {
      logger.error("Error cleaning up leftover state", { mode: name, err });
      failed.push(name);
    }
  }
  return failed;
}

/**
 * Removes the leftovers of every other mode for `mode`, in CLEANUP_ORDER (see leftoverModes).
 * Every mode is tried; returns the modes that left something behind (each failure logged).
 */
export function removeLeftovers(
  mode: ProxyModeName,
  runner: CommandRunner,
  logger: Logger,
): Promise<ProxyModeName[]> {
  return runCleanups(
    leftoverModes(mode),
    (name) => leftoverCleanup(mode, name),
    runner,
    logger,
  );
}

/**
 * Removes the state of each of `modes`, in CLEANUP_ORDER. Absent state is success. Every mode is
 * tried; returns the modes that left something behind (each failure logged).
 */
export function cleanupModes(
  modes: readonly ProxyModeName[],
  runner: CommandRunner,
  logger: Logger,
): Promise<ProxyModeName[]> {
  const names = CLEANUP_ORDER.filter((m) => modes.includes(m));
  return runCleanups(names, (name) => MODES[name].cleanup, runner, logger);
}
