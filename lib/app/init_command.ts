/**
 * `--init-only`: what upstream's kube-proxy does before it needs the API server, with full
 * privileges, then exits: tune conntrack (platformSetup), and the chosen mode's host settings
 * and start checks (the sysctls its NewProxier sets before it returns under --init-only). No
 * rules are written, no server is started and nothing is watched, so a privileged init
 * container can do this and the proxy's own container can then run with CAP_NET_ADMIN alone.
 * Unlike upstream, the other modes' leftovers are not removed here: they keep routing services
 * until the proxy's own first sync is in the kernel, and the proxy removes them then (removing
 * them needs CAP_NET_ADMIN only).
 */
import { loadMode } from "../backends/mod.ts";
import type { ProxyConfig } from "../config/mod.ts";
import { tuneConntrack } from "../conntrack/mod.ts";
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";
import { asCommandFailure } from "./commands.ts";

/** Applies the node settings of `config.mode`; throws CommandFailure when the mode cannot run. */
export async function initOnlyCommand(
  config: ProxyConfig,
  runner: CommandRunner,
  logger: Logger,
): Promise<void> {
  const mode = await loadMode(config.mode);
  await tuneConntrack({ config: config.conntrack, runner, logger });
  // prepare() runs the start checks and sets the sysctls; the backends it offers are not made.
  await asCommandFailure(() => mode.prepare({ config, runner, logger }));
  logger.info("System initialized and --init-only specified", { mode: mode.name });
}
