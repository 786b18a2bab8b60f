/** The one-shot commands: `render`, `--cleanup` and `--write-config-to`. */
import { cleanupIptables, renderFullRestore } from "../backends/iptables/mod.ts";
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

/** Removes the rules of every mode; succeeds when nothing is there. */
export async function cleanupCommand(runner: CommandRunner, logger: Logger): Promise<void> {
  await cleanupIptables(runner, logger);
  logger.info("Cleaned up iptables rules");
}

/** Writes the defaulted configuration as YAML. */
export async function writeConfigCommand(config: ProxyConfig, path: string): Promise<void> {
  await Deno.writeTextFile(path, configToYaml(config));
}
