/** The one-shot commands: `render`, `--cleanup` and `--write-config-to`. */
import { CLEANUP_ORDER, cleanupModes, loadMode, ModeUnavailableError } from "../backends/mod.ts";
import { configToYaml, type ProxyConfig } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";
import { CommandFailure } from "./command_failure.ts";
import { loadManifestState } from "./initial_state.ts";

/** Runs `fn`, turning a mode's "cannot run" into the CommandFailure main.ts exits with. */
export async function asCommandFailure<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ModeUnavailableError) throw new CommandFailure(err.message, err.exitCode);
    throw err;
  }
}

/** Renders what the chosen mode would apply on an empty node, per family. */
export async function renderCommand(config: ProxyConfig, logger: Logger): Promise<string> {
  if (config.manifests === "") {
    throw new CommandFailure("render needs --manifests PATH: the state to render", 1);
  }
  const tracker = await loadManifestState(
    config.manifests,
    config.hostnameOverride,
    config.nodeIPs,
    logger,
  );
  // IPv4 always; IPv6 only when the state has IPv6 services.
  const states = (["IPv4", "IPv6"] as IPFamily[])
    .map((family) => tracker.snapshot(family))
    .filter((s) => s.family === "IPv4" || s.services.size > 0);
  const mode = await loadMode(config.mode);
  return await asCommandFailure(() => mode.render(config, states));
}

/**
 * Removes the state of every mode (iptables, nftables, IPVS + ipset), like upstream's
 * `--cleanup`. Absent state is success; when something could not be removed, the other modes
 * are still cleaned and it fails with exit code 1.
 */
export async function cleanupCommand(runner: CommandRunner, logger: Logger): Promise<void> {
  const failed = await cleanupModes(CLEANUP_ORDER, runner, logger);
  if (failed.length > 0) {
    const modes = failed.map((m) => `"${m}"`).join(", ");
    throw new CommandFailure(`Cleanup left state behind in mode ${modes}: see the errors above`, 1);
  }
}

/** Writes the defaulted configuration as YAML. */
export async function writeConfigCommand(config: ProxyConfig, path: string): Promise<void> {
  await Deno.writeTextFile(path, configToYaml(config));
}
