/**
 * iptables mode's check for the jumps from built-in chains into its chains (lib/netfilter
 * lists them and inserts them one by one when missing).
 */
import {
  hasJump,
  IPTABLES_JUMP_CHAINS,
  type JumpRule,
  type SavedTable,
} from "../../netfilter/mod.ts";

/** The jumps of `tableName` that `table` lacks (all of them when the table is unknown). */
export function missingJumps(
  tableName: "filter" | "nat",
  table: SavedTable | undefined,
): JumpRule[] {
  return IPTABLES_JUMP_CHAINS.filter((r) => r.table === tableName && !hasJump(table, r));
}
