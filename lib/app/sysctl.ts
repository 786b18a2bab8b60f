/** The kernel knobs the proxy sets at start, written straight to /proc/sys/net. */
import type { Logger } from "../log/mod.ts";

/** Path of a sysctl under /proc/sys (`net/ipv4/conf/all/route_localnet`). */
export function sysctlPath(name: string): string {
  return `/proc/sys/${name.replaceAll(".", "/")}`;
}

/** Sets `name` to `value` unless it already has it; logs and returns false where it cannot. */
export async function ensureSysctl(name: string, value: string, logger: Logger): Promise<boolean> {
  const path = sysctlPath(name);
  try {
    if ((await Deno.readTextFile(path)).trim() === value) return true;
    await Deno.writeTextFile(path, `${value}\n`);
    logger.info("Set sysctl", { name, value });
    return true;
  } catch (err) {
    logger.warn("Could not set sysctl", { name, value, err });
    return false;
  }
}

/**
 * Localhost NodePorts need `route_localnet=1` so 127.0.0.1 traffic can be DNATed off the
 * loopback device (upstream does the same when localhostNodePorts is on).
 */
export async function enableRouteLocalnet(logger: Logger): Promise<boolean> {
  return await ensureSysctl("net/ipv4/conf/all/route_localnet", "1", logger);
}
