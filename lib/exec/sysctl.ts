/**
 * The one sysctl helper every mode and the conntrack tuning use. Knobs go through the `sysctl`
 * binary (in the run permission): Deno refuses /proc writes without full access.
 */
import type { Logger } from "../log/mod.ts";
import type { CommandRunner } from "./runner.ts";

/** What ensureSysctl did. */
export type SysctlOutcome = "set" | "unchanged" | "failed";

/** Reads a sysctl by its dotted name (e.g. `net.ipv4.ip_forward`); null when it cannot. */
export async function readSysctl(runner: CommandRunner, name: string): Promise<string | null> {
  const out = await runner({ cmd: "sysctl", args: ["-n", name] });
  return out.code === 0 ? out.stdout.trim() : null;
}

/** How ensureSysctl decides a knob is already fine. */
export interface EnsureSysctlOptions {
  /** "raise": a larger numeric value is left alone (upstream's rule for conntrack sizes). */
  readonly mode?: "exact" | "raise";
  /** What the warning on failure says about the knob's purpose. */
  readonly what?: string;
}

/**
 * Sets `name` to `value` unless it already has it. procps' `sysctl -w` exits 0 even when the
 * kernel refuses a read-only key, so success is judged by reading the value back. A refusal is
 * logged as a warning; callers for which it is fatal check for "failed".
 */
export async function ensureSysctl(
  runner: CommandRunner,
  name: string,
  value: string | number,
  logger: Logger,
  options: EnsureSysctlOptions = {},
): Promise<SysctlOutcome> {
  const want = String(value);
  const current = await readSysctl(runner, name);
  if (current === want) return "unchanged";
  if (
    options.mode === "raise" && current !== null && Number(current) > Number(want)
  ) return "unchanged";
  const set = await runner({ cmd: "sysctl", args: ["-w", `${name}=${want}`] });
  const after = set.code === 0 ? await readSysctl(runner, name) : null;
  if (after !== want) {
    logger.warn(`Could not set ${options.what ?? "sysctl"}; /proc/sys may be read-only here`, {
      name,
      value: want,
      current: after,
      stderr: set.stderr.trim(),
    });
    return "failed";
  }
  logger.info("Set sysctl", { name, value: want });
  return "set";
}
