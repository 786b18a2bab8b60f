/**
 * `--cleanup` for iptables: removes our chains and the jumps into them from every table of
 * both flavours and both families, leaving everyone else's rules alone (see isCleanupChain).
 */
import {
  COMMAND_NOT_FOUND,
  CommandError,
  type CommandRunner,
  denoCommandRunner,
} from "../exec/mod.ts";
import { type Logger, silentLogger } from "../log/mod.ts";
import type { IPFamily } from "../proxy/mod.ts";
import { IPTABLES_WAIT_ARGS, iptablesBinaries, type IptablesFlavour } from "./_flavour.ts";
import { isCleanupChain, KUBE_PROXY_CHAIN_PREFIXES } from "./_kube_chains.ts";
import { jumpMatches, type JumpRule } from "./_jump_rule.ts";
import { chainLine } from "./_rule_builder.ts";
import { isSkippedLine, parseIptablesSave } from "./_save_parser.ts";
import { ruleTarget } from "./_tokenize.ts";

/**
 * What a running mode that writes iptables rules itself keeps when it removes the other such
 * mode's leftovers (iptables and IPVS mode share chain names): its own chains, which its restore
 * rewrites whole, and its own jumps. Everything else of ours goes, as with `--cleanup`.
 */
export interface KeptIptablesState {
  /** Our fixed-name chains the running mode writes, by table. */
  readonly chains: Readonly<Record<string, readonly string[]>>;
  /** Whether the per-service prefixed chains (KUBE_PROXY_CHAIN_PREFIXES) are its own. */
  readonly servicePrefixes: boolean;
  /**
   * The other mode's jumps from built-in chains into a chain the running mode keeps; they are
   * deleted (a jump into a chain that goes is deleted in any case).
   */
  readonly staleJumps: readonly JumpRule[];
}

/**
 * The per-service chains a running mode that keeps `servicePrefixes` writes itself (iptables
 * mode's render): its first sync, which comes before any leftovers pass, wrote each of them as
 * it renders, so their rules jump only to chains it keeps. They can be neither removed nor
 * spare anything, so their lines (~430,000 at 10,000 services) are passed over unread: parsed,
 * they cost the pass ~90 MB and ~0.4 s. KUBE-XLB- chains of older releases are still read: one
 * may jump to a chain that goes.
 */
const RENDERED_SERVICE_PREFIXES: readonly string[] = KUBE_PROXY_CHAIN_PREFIXES.filter((p) =>
  p !== "KUBE-XLB-"
);

/** The prefixes of the chains passed over unread when `keep` is the running mode's. */
function skippedPrefixes(keep: KeptIptablesState | undefined): readonly string[] {
  return keep?.servicePrefixes ? RENDERED_SERVICE_PREFIXES : [];
}

function keeps(keep: KeptIptablesState | undefined, table: string, chain: string): boolean {
  if (keep === undefined) return false;
  if (keep.chains[table]?.includes(chain)) return true;
  return keep.servicePrefixes && KUBE_PROXY_CHAIN_PREFIXES.some((p) => chain.startsWith(p));
}

/**
 * The restore input (for `--noflush`) that deletes the jumps from built-in chains into our
 * chains, then flushes and deletes our chains; null when there is nothing to remove. A chain of
 * ours that another program's chain jumps to is left whole, with every chain of ours it leads
 * to: removing it would change (or break) that program's rules. With `keep`, the running
 * mode's own chains and jumps stay. Pure, so it is tested against iptables-save text.
 */
export function computeCleanupPayload(saveText: string, keep?: KeptIptablesState): string | null {
  const out: string[] = [];
  for (const table of parseIptablesSave(saveText, skippedPrefixes(keep)).values()) {
    const chains = [...table.chains.values()];
    const builtin = new Set(chains.filter((c) => c.builtin).map((c) => c.name));
    const doomedSet = new Set(
      chains.filter((c) => !c.builtin && isCleanupChain(c.name) && !keeps(keep, table.name, c.name))
        .map((c) => c.name),
    );
    const staleJumps = (keep?.staleJumps ?? []).filter((j) => j.table === table.name);
    // Spare what a kept non-built-in chain jumps to, until nothing more is spared.
    for (let spared = true; spared;) {
      spared = false;
      for (const rule of table.rules) {
        if (builtin.has(rule.chain) || doomedSet.has(rule.chain)) continue;
        const target = ruleTarget(rule.spec);
        if (target !== null && doomedSet.delete(target)) spared = true;
      }
    }
    const doomed = chains.map((c) => c.name).filter((name) => doomedSet.has(name));
    const jumps = table.rules.filter((rule) => {
      if (!builtin.has(rule.chain)) return false;
      const target = ruleTarget(rule.spec);
      return target !== null &&
        (doomedSet.has(target) || staleJumps.some((j) => jumpMatches(rule, target, j)));
    });
    if (doomed.length === 0 && jumps.length === 0) continue;
    out.push(`*${table.name}`);
    for (const chain of doomed) out.push(chainLine(chain));
    for (const rule of jumps) out.push(`-D ${rule.chain} ${rule.spec}`);
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
  keep?: KeptIptablesState,
): Promise<void> {
  let firstError: CommandError | null = null;
  const skip = skippedPrefixes(keep);
  for (const flavour of FLAVOURS) {
    for (const family of FAMILIES) {
      const bins = iptablesBinaries(family, flavour);
      // The skipped chains' lines are dropped as they are read, so the whole table's text (32
      // MB at 10,000 services) is never held at once.
      const saved = await runner({
        cmd: bins.save,
        args: [],
        ...(skip.length === 0 ? {} : { stdoutKeep: (line: string) => !isSkippedLine(line, skip) }),
      });
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
      const payload = computeCleanupPayload(saved.stdout, keep);
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
