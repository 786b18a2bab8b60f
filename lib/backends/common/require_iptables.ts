/**
 * The start check iptables and IPVS mode share: both write iptables rules, so both need some
 * iptables flavour that runs here.
 */
import type { CommandRunner } from "../../exec/mod.ts";
import { natReadable } from "../../netfilter/mod.ts";
import { ModeUnavailableError } from "../mode.ts";

/**
 * Fails with exit code 2 unless some iptables flavour can be run here. nft is tried first:
 * reading a legacy table that does not exist makes the kernel create it, and a legacy nat table
 * on an nft node makes iptables-nft warn about legacy tables present.
 */
export async function requireIptables(runner: CommandRunner): Promise<void> {
  const stderr: string[] = [];
  for (const flavour of ["nft", "legacy"] as const) {
    const out = await natReadable(runner, "IPv4", flavour);
    if (out.ok) return;
    stderr.push(out.stderr.trim());
  }
  throw new ModeUnavailableError(`Cannot run iptables: ${stderr.find((s) => s) ?? ""}`, 2);
}
