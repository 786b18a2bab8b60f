/**
 * The kernel knobs the proxy sets at start. Deno refuses writes under /proc without full
 * access, so they go through the `sysctl` binary (in the run permission) instead.
 */
import type { CommandRunner } from "../exec/mod.ts";
import type { Logger } from "../log/mod.ts";

/** Sets `name` (dotted, e.g. `net.ipv4.conf.all.route_localnet`) unless it already has `value`. */
export async function ensureSysctl(
  runner: CommandRunner,
  name: string,
  value: string,
  logger: Logger,
): Promise<boolean> {
  const current = await runner({ cmd: "sysctl", args: ["-n", name] });
  if (current.code === 0 && current.stdout.trim() === value) return true;
  const set = await runner({ cmd: "sysctl", args: ["-w", `${name}=${value}`] });
  // procps' `sysctl -w` exits 0 even when the kernel refuses a read-only key: read it back.
  const after = set.code === 0 ? await runner({ cmd: "sysctl", args: ["-n", name] }) : set;
  if (set.code !== 0 || after.code !== 0 || after.stdout.trim() !== value) {
    const stderr = (set.stderr || after.stderr).trim();
    logger.warn("Could not set sysctl", { name, value, stderr });
    return false;
  }
  logger.info("Set sysctl", { name, value });
  return true;
}

/**
 * Localhost NodePorts need `route_localnet=1` so 127.0.0.1 traffic can be DNATed off the
 * loopback device (upstream does the same when localhostNodePorts is on).
 */
export async function enableRouteLocalnet(runner: CommandRunner, logger: Logger): Promise<boolean> {
  return await ensureSysctl(runner, "net.ipv4.conf.all.route_localnet", "1", logger);
}
