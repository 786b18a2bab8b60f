/** The one-shot commands: `render`, `--cleanup` and `--write-config-to`. */
import { cleanupIptables, renderFullRestore } from "../backends/iptables/mod.ts";
import { cleanupIpvs } from "../backends/ipvs/mod.ts";
import { cleanupNftables } from "../backends/nftables/mod.ts";
import { configToYaml, type ProxyConfig } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";
import { loadManifestState } from "./initial_state.ts";
import { iptablesRenderOptions } from "./iptables_backends.ts";

/** A failure the caller reports and exits with `code` for. */
export class CommandFailure extends Error {
  /** `code` is the process exit code. */
  constructor(message: string, readonly code: number) {
    super(message);
    this.name = "CommandFailure";
  }
}

/** Renders what the chosen mode would apply on an empty node, per family. */
export async function renderCommand(config: ProxyConfig, logger: Logger): Promise<string> {
  if (config.manifests === "") {
    throw new CommandFailure("render needs --manifests PATH: the state to render", 1);
  }
  if (config.mode !== "iptables") {
    throw new CommandFailure(
      `Invalid --proxy-mode "${config.mode}" for render: only "iptables" is available yet`,
      1,
    );
  }
  const tracker = await loadManifestState(
    config.manifests,
    config.hostnameOverride,
    config.nodeIPs,
    logger,
  );
  const out: string[] = [];
  for (const family of ["IPv4", "IPv6"] as IPFamily[]) {
    const state = tracker.snapshot(family);
    if (family === "IPv6" && state.services.size === 0) continue;
    const cmd = family === "IPv4" ? "iptables-restore" : "ip6tables-restore";
    out.push(`# ${family}: input for ${cmd} --noflush`);
    out.push(renderFullRestore(state, iptablesRenderOptions(config, family)).trimEnd());
  }
  return out.join("\n") + "\n";
}

/** One mode's cleanup, as cleanupCommand runs it. */
type ModeCleanup = (runner: CommandRunner, logger: Logger) => Promise<void>;

/**
 * The cleanups of every mode, in order: iptables first, because an ipset (IPVS mode) cannot be
 * destroyed while an iptables rule still references it.
 */
const MODE_CLEANUPS: readonly (readonly [string, ModeCleanup])[] = [
  ["iptables", cleanupIptables],
  ["nftables", cleanupNftables],
  ["ipvs", cleanupIpvs],
];

/**
 * Removes the state of every mode (iptables, nftables, IPVS + ipset), like upstream's
 * `--cleanup`. Absent state is success; when something could not be removed, the other modes
 * are still cleaned and it fails with exit code 1.
 */
export async function cleanupCommand(runner: CommandRunner, logger: Logger): Promise<void> {
  const failed: string[] = [];
  for (const [mode, cleanup] of MODE_CLEANUPS) {
    try {
      await cleanup(runner, logger);
      logger.info("Cleaned up leftover state", { mode });
    } catch (err) {
      logger.error("Error cleaning up leftover state", { mode, err });
      failed.push(mode);
    }
  }
  if (failed.length > 0) {
    const modes = failed.map((m) => `"${m}"`).join(", ");
    throw new CommandFailure(`Cleanup left state behind in mode ${modes}: see the errors above`, 1);
  }
}

/** Writes the defaulted configuration as YAML. */
export async function writeConfigCommand(config: ProxyConfig, path: string): Promise<void> {
  await Deno.writeTextFile(path, configToYaml(config));
}
