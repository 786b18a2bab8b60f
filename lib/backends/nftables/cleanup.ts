/**
 * `--cleanup` for nftables mode: deletes our `kube-proxy` table in the ip and ip6 families,
 * as upstream's nftables CleanupLeftovers does. Tables of other programs are left alone.
 * Nothing is listed: `nft list tables` loads every set element on nft 1.0.x (seconds at
 * 10,000 services), so each family gets one `add table` + `delete table` transaction, which
 * succeeds whether or not the table was there and costs the same either way.
 */
import {
  COMMAND_NOT_FOUND,
  CommandError,
  type CommandRunner,
  denoCommandRunner,
} from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";

/** The name of the table nftables mode programs, in every family it uses. */
export const KUBE_PROXY_TABLE = "kube-proxy";

/** The nft families nftables mode uses (one table per IP family, never `inet`). */
export const NFTABLES_FAMILIES: readonly string[] = ["ip", "ip6"];

/** A table as `nft list tables` names it. */
export interface NftTableRef {
  readonly family: string;
  readonly name: string;
}

/** Parses `nft list tables` output (`table ip kube-proxy` per line). */
export function parseNftTables(text: string): NftTableRef[] {
  const out: NftTableRef[] = [];
  for (const line of text.split("\n")) {
    const m = /^table\s+(\S+)\s+(\S+)\s*$/.exec(line.trim());
    if (m) out.push({ family: m[1]!, name: m[2]! });
  }
  return out;
}

/** The transaction that removes `family`'s table whether or not it exists. */
export function deleteTableScript(family: string): string {
  return `add table ${family} ${KUBE_PROXY_TABLE}\ndelete table ${family} ${KUBE_PROXY_TABLE}\n`;
}

/**
 * Removes the `kube-proxy` tables. A missing `nft` binary, or a family nftables cannot even
 * list, means nothing of ours can be there (upstream skips such families too); a table that
 * exists but cannot be deleted is logged and thrown after both families are tried.
 */
export async function cleanupNftables(
  runner: CommandRunner = denoCommandRunner,
  logger: Logger = silentLogger,
): Promise<void> {
  let firstError: CommandError | null = null;
  for (const family of NFTABLES_FAMILIES) {
    const args = ["-f", "-"];
    const out = await runner({ cmd: "nft", args, stdin: deleteTableScript(family) });
    if (out.code === 0) {
      logger.debug(2, "Deleted nftables table if present", { family, table: KUBE_PROXY_TABLE });
      continue;
    }
    if (out.code === COMMAND_NOT_FOUND) {
      logger.debug(2, "nftables not available, nothing to clean up", { reason: "nft not found" });
      return;
    }
    // Only on failure: can this family be used at all? (cheap: chain names only)
    const probe = await runner({ cmd: "nft", args: ["list", "chains", family] });
    if (probe.code !== 0) {
      logger.debug(2, "nftables not available, nothing to clean up", {
        family,
        reason: probe.stderr.trim(),
      });
      continue;
    }
    logger.error("Error cleaning up nftables rules", { family, stderr: out.stderr.trim() });
    firstError ??= new CommandError("nft", args, out.code, out.stderr);
  }
  if (firstError !== null) throw firstError;
}
