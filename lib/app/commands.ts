/** The one-shot commands: `render`, `--cleanup` and `--write-config-to`. */
import {
  CLEANUP_ORDER,
  cleanupModes,
  loadMode,
  MODE_CONFIG_SECTIONS,
  ModeUnavailableError,
} from "../backends/mod.ts";
import { configToYaml, type ProxyConfig } from "../config/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import { errorMessage, type Logger } from "../log/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";
import { CommandFailure } from "./command_failure.ts";
import { loadManifestState } from "./initial_state.ts";
import { trackerSettings } from "./tracker_settings.ts";

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
    trackerSettings(config),
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

/**
 * Where `--write-config-to` can write under the program's own permission set (deno.json
 * `permissions.proxy.write`, also baked into the compiled binary): kube-proxy's config folder,
 * which the read list also holds, so the file can be passed to --config as it is.
 */
export const WRITE_CONFIG_DIR = "/var/lib/kube-proxy";

/** Checks whether this process may write `path`; the default asks Deno without prompting. */
export type WritePermission = (path: string) => boolean;

const denoWritePermission: WritePermission = (path) =>
  Deno.permissions.querySync({ name: "write", path }).state === "granted";

/**
 * Writes the configuration as YAML, as upstream's writeConfigFile does. A path the permission
 * set does not cover, or one that cannot be written, fails with exit code 1 and says why.
 */
export async function writeConfigCommand(
  config: ProxyConfig,
  path: string,
  logger: Logger,
  mayWrite: WritePermission = denoWritePermission,
): Promise<void> {
  if (!mayWrite(path)) {
    throw new CommandFailure(
      `Cannot write --write-config-to "${path}": the "proxy" permission set allows writing ` +
        `only under ${WRITE_CONFIG_DIR} (deno.json permissions.proxy.write); expected a path ` +
        `there, such as "${WRITE_CONFIG_DIR}/config.yaml"`,
      1,
    );
  }
  try {
    await Deno.writeTextFile(path, configToYaml(config, { modeSections: MODE_CONFIG_SECTIONS }));
  } catch (err) {
    throw new CommandFailure(`Cannot write --write-config-to "${path}": ${errorMessage(err)}`, 1);
  }
  logger.info("Wrote configuration", { file: path });
}
