/**
 * Applies `oomScoreAdj` to the proxy's own process, as upstream does at start (default -999,
 * so the kernel's OOM killer spares the node's service plumbing).
 *
 * Deno grants writes to /proc/self/* and /proc/<pid>/* only with --allow-all, whatever the
 * write list says, so the value is set with util-linux `choom` (in the run permission), the
 * same way the other kernel knobs go through their binaries. Lowering the value needs
 * CAP_SYS_RESOURCE; without it the kernel refuses and the proxy warns and carries on.
 */
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";

/** Options for applyOomScoreAdj. */
export interface OomScoreOptions {
  readonly value: number;
  readonly runner: CommandRunner;
  readonly logger: Logger;
  /** The process to adjust; defaults to this one. */
  readonly pid?: number;
}

/** Sets the OOM score adjustment; returns false (after a warning) when it could not. */
export async function applyOomScoreAdj(options: OomScoreOptions): Promise<boolean> {
  const pid = options.pid ?? Deno.pid;
  const out = await options.runner({
    cmd: "choom",
    args: ["-n", String(options.value), "-p", String(pid)],
  });
  if (out.code !== 0) {
    options.logger.warn("Failed to apply oomScoreAdj", {
      value: options.value,
      pid,
      stderr: out.stderr.trim(),
    });
    return false;
  }
  options.logger.debug(2, "Applied oomScoreAdj", { value: options.value, pid });
  return true;
}
