/**
 * `--cleanup` for iptables: removes our chains and the jumps into them from every table of
 * both flavours and both families, leaving everyone else's rules alone.
 */
import {
  COMMAND_NOT_FOUND,
  CommandError,
  type CommandRunner,
  denoCommandRunner,
} from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";
import type { IPFamily } from "../../proxy/mod.ts";
import { IPTABLES_WAIT_ARGS, iptablesBinaries, type IptablesFlavour } from "./flavour.ts";
import { chainLine } from "./rule_buffer.ts";
import { parseIptablesSave, ruleTarget } from "./save_parser.ts";

/** Kubelet's marker chains: other tools detect the flavour by them, so they stay. */
export const KUBELET_OWNED_CHAINS: ReadonlySet<string> = new Set([
  "KUBE-IPTABLES-HINT",
  "KUBE-KUBELET-CANARY",
]);

/** True for a chain `--cleanup` deletes. */
export function isCleanupChain(chain: string): boolean {
  return chain.startsWith("KUBE-") && !KUBELET_OWNED_CHAINS.has(chain);
}

/**
 * The restore input (for `--noflush`) that deletes every jump into a KUBE-* chain from other
 * chains, then flushes and deletes the KUBE-* chains; null when there is nothing to remove.
 * Pure, so it is tested against iptables-save text.
 */
export function computeCleanupPayload(saveText: string): string | null {
  const out: string[] = [];
  for (const table of parseIptablesSave(saveText).values()) {
    const doomed = [...table.chains.values()]
      .filter((c) => !c.builtin && isCleanupChain(c.name))
      .map((c) => c.name);
    if (doomed.length === 0) continue;
    const doomedSet = new Set(doomed);
    out.push(`*${table.name}`);
    for (const chain of doomed) out.push(chainLine(chain));
    for (const rule of table.rules) {
      if (doomedSet.has(rule.chain)) continue;
      const target = ruleTarget(rule.spec);
      if (target !== null && doomedSet.has(target)) out.push(`-D ${rule.chain} ${rule.spec}`);
    }
    for (const chain of doomed) out.push(`-X ${chain}`);
    out.push("COMMIT");
  }
  return out.length === 0 ? null : out.join("\n") + "\n";
}

const FLAVOURS: readonly IptablesFlavour[] = ["legacy", "nft"];
const FAMILIES: readonly IPFamily[] = ["IPv4", "IPv6"];

/**
 * Removes our iptables state everywhere. Missing binaries are skipped; other failures are
 * logged, the rest is still attempted, and the first failure is thrown at the end.
 */
export async function cleanupIptables(
  runner: CommandRunner = denoCommandRunner,
  logger: Logger = silentLogger,
): Promise<void> {
  let firstError: CommandError | null = null;
  for (const flavour of FLAVOURS) {
    for (const family of FAMILIES) {
      const bins = iptablesBinaries(family, flavour);
      const saved = await runner({ cmd: bins.save, args: [] });
      if (saved.code === COMMAND_NOT_FOUND) {
        logger.debug(2, "iptables binary not found, nothing to clean up", { cmd: bins.save });
        continue;
      }
      if (saved.code !== 0) {
        logger.error("Failed to execute iptables-save", {
          cmd: bins.save,
          stderr: saved.stderr.trim(),
        });
        firstError ??= new CommandError(bins.save, [], saved.code, saved.stderr);
        continue;
      }
      const payload = computeCleanupPayload(saved.stdout);
      if (payload === null) continue;
      const args = [...IPTABLES_WAIT_ARGS, "--noflush"];
      const out = await runner({ cmd: bins.restore, args, stdin: payload });
      if (out.code !== 0) {
        logger.error("Failed to execute iptables-restore", {
          cmd: bins.restore,
          stderr: out.stderr.trim(),
        });
        firstError ??= new CommandError(bins.restore, args, out.code, out.stderr);
        continue;
      }
      logger.info("Removed iptables rules", { flavour, family });
    }
  }
  if (firstError !== null) throw firstError;
}
