/**
 * The one map of proxy modes, and which modes' leftovers each mode removes at start. Modes are
 * picked here by name, never registered by import side effects. A mode's module is loaded only
 * when that mode is asked for: a node runs one mode, so the other two (their renderers,
 * proxiers and parsers) stay unloaded; removing a mode's leftovers
 * loads only that mode's cleanup.
 */
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { ProxyMode, ProxyModeName } from "./mode.ts";

/** Every mode `--proxy-mode` can name. */
export const PROXY_MODE_NAMES: readonly ProxyModeName[] = ["iptables", "ipvs", "nftables"];

const MODE_MODULES: Readonly<Record<ProxyModeName, () => Promise<ProxyMode>>> = {
  iptables: async () => (await import("./iptables/mode.ts")).iptablesMode,
  ipvs: async () => (await import("./ipvs/mode.ts")).ipvsMode,
  nftables: async () => (await import("./nftables/mode.ts")).nftablesMode,
};

type Cleanup = ProxyMode["cleanup"];

const MODE_CLEANUPS: Readonly<Record<ProxyModeName, () => Promise<Cleanup>>> = {
  iptables: async () => (await import("./iptables/cleanup.ts")).cleanupIptables,
  ipvs: async () => (await import("./ipvs/cleanup.ts")).cleanupIpvs,
  nftables: async () => (await import("./nftables/cleanup.ts")).cleanupNftables,
};

/** The mode `--proxy-mode` names, its module loaded on first use. */
export function loadMode(name: ProxyModeName): Promise<ProxyMode> {
  return MODE_MODULES[name]();
}

/**
 * The order `--cleanup` removes every mode's state in: iptables first, because an ipset (IPVS
 * mode) cannot be destroyed while an iptables rule still references it.
 */
export const CLEANUP_ORDER: readonly ProxyModeName[] = ["iptables", "nftables", "ipvs"];

/**
 * The modes whose leftovers starting in `mode` removes, as upstream 1.29+ does: nftables mode
 * removes iptables and IPVS state; iptables and ipvs modes delete the nftables tables (and do
 * not clean each other: IPVS mode programs iptables too).
 */
export function leftoverModes(mode: ProxyModeName): ProxyModeName[] {
  return mode === "nftables" ? ["iptables", "ipvs"] : ["nftables"];
}

/**
 * Removes the state of each of `modes`, in CLEANUP_ORDER. Absent state is success. Every mode is
 * tried; returns the modes that left something behind (each failure logged).
 */
export async function cleanupModes(
  modes: readonly ProxyModeName[],
  runner: CommandRunner,
  logger: Logger,
): Promise<ProxyModeName[]> {
  const failed: ProxyModeName[] = [];
  for (const name of CLEANUP_ORDER.filter((m) => modes.includes(m))) {
    try {
      const cleanup = await MODE_CLEANUPS[name]();
      await cleanup(runner, logger);
      logger.debug(2, "Cleaned up leftover state", { mode: name });
    } catch (err) {
      logger.error("Error cleaning up leftover state", { mode: name, err });
      failed.push(name);
    }
  }
  return failed;
}
