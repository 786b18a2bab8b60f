/**
 * `--cleanup` for nftables mode: deletes our `kube-proxy` table in the ip and ip6 families,
 * as upstream's nftables CleanupLeftovers does. Tables of other programs are left alone.
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

/**
 * Removes the `kube-proxy` tables. A missing `nft` binary or an nftables that cannot be
 * listed means nothing of ours can be there (upstream skips such families too); a table
 * that exists but cannot be deleted is logged and thrown after both families are tried.
 */
export async function cleanupNftables(
  runner: CommandRunner = denoCommandRunner,
  logger: Logger = silentLogger,
): Promise<void> {
  const listed = await runner({ cmd: "nft", args: ["list", "tables"] });
  if (listed.code !== 0) {
    const reason = listed.code === COMMAND_NOT_FOUND ? "nft not found" : listed.stderr.trim();
    logger.debug(2, "nftables not available, nothing to clean up", { reason });
    return;
  }
  const present = parseNftTables(listed.stdout);
  let firstError: CommandError | null = null;
  for (const family of NFTABLES_FAMILIES) {
    if (!present.some((t) => t.family === family && t.name === KUBE_PROXY_TABLE)) continue;
    const args = ["delete", "table", family, KUBE_PROXY_TABLE];
    const out = await runner({ cmd: "nft", args });
    if (out.code !== 0) {
      logger.error("Error cleaning up nftables rules", { family, stderr: out.stderr.trim() });
      firstError ??= new CommandError("nft", args, out.code, out.stderr);
      continue;
    }
    logger.info("Removed nftables table", { family, table: KUBE_PROXY_TABLE });
  }
  if (firstError !== null) throw firstError;
}
