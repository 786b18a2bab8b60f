/**
 * `--cleanup` for IPVS mode, in upstream's order: clear the IPVS virtual servers, delete the
 * `kube-ipvs0` device the service addresses are bound to, then destroy our ipsets. Run it after
 * the iptables cleanup: a set that an iptables rule still references cannot be destroyed.
 * Unlike upstream, which skips all of this when the ip_vs module cannot be loaded, the device
 * and the ipsets are still removed on a kernel without IPVS: they can exist there too.
 */
import {
  COMMAND_NOT_FOUND,
  CommandError,
  type CommandRunner,
  denoCommandRunner,
} from "../../exec/mod.ts";
import { type Logger, silentLogger } from "../../log/mod.ts";
import { KUBE_IPSET_NAMES } from "./_ipset_names.ts";

/** The device IPVS mode binds service addresses to (a dummy interface upstream). */
export const KUBE_IPVS_DEVICE = "kube-ipvs0";

/** Parses `ip -j link show` output into the interface names. */
export function parseLinkNames(json: string): string[] {
  if (json.trim() === "") return [];
  const links: unknown = JSON.parse(json);
  if (!Array.isArray(links)) {
    throw new Error(`Invalid "ip -j link show" output: expected a JSON array`);
  }
  return links
    .map((l) => (l !== null && typeof l === "object" ? (l as { ifname?: unknown }).ifname : null))
    .filter((n): n is string => typeof n === "string");
}

/** Parses `ipset list -n` output (one set name per line). */
export function parseIpsetNames(text: string): string[] {
  return text.split("\n").map((l) => l.trim()).filter((l) => l !== "");
}

/**
 * Clears every IPVS virtual server, as upstream's cleanup flushes IPVS (it cannot tell which
 * ones kube-proxy made). Without IPVS in the kernel (the listing fails) there is nothing to
 * clear: logged at -v=2, not an error.
 */
async function clearVirtualServers(runner: CommandRunner, logger: Logger): Promise<Error | null> {
  const probe = await runner({ cmd: "ipvsadm", args: ["-L", "-n"] });
  if (probe.code !== 0) {
    const reason = probe.code === COMMAND_NOT_FOUND ? "ipvsadm not found" : probe.stderr.trim();
    logger.debug(2, "IPVS not available, no virtual servers to clean up", { reason });
    return null;
  }
  const args = ["--clear"];
  const out = await runner({ cmd: "ipvsadm", args });
  if (out.code !== 0) {
    logger.error("Error flushing ipvs rules", { stderr: out.stderr.trim() });
    return new CommandError("ipvsadm", args, out.code, out.stderr);
  }
  logger.info("Cleared IPVS virtual servers");
  return null;
}

/**
 * Deletes the `kube-ipvs0` device when it exists, whatever its link type: the name is IPVS
 * mode's own (upstream only deletes it when it is a dummy device). Returns the failure.
 */
export async function deleteIpvsDevice(
  runner: CommandRunner,
  logger: Logger,
): Promise<Error | null> {
  const listArgs = ["-j", "link", "show"];
  const listed = await runner({ cmd: "ip", args: listArgs });
  if (listed.code !== 0) {
    logger.error("Error listing network interfaces", { stderr: listed.stderr.trim() });
    return new CommandError("ip", listArgs, listed.code, listed.stderr);
  }
  let names: string[];
  try {
    names = parseLinkNames(listed.stdout);
  } catch (err) {
    logger.error("Error listing network interfaces", { err });
    return err instanceof Error ? err : new Error(String(err));
  }
  if (!names.includes(KUBE_IPVS_DEVICE)) return null;
  const args = ["link", "del", KUBE_IPVS_DEVICE];
  const out = await runner({ cmd: "ip", args });
  if (out.code !== 0) {
    logger.error("Error deleting the device created by ipvs proxier", {
      device: KUBE_IPVS_DEVICE,
      stderr: out.stderr.trim(),
    });
    return new CommandError("ip", args, out.code, out.stderr);
  }
  logger.info("Deleted IPVS device", { device: KUBE_IPVS_DEVICE });
  return null;
}

/**
 * Destroys the ipsets IPVS mode creates; sets with other names (not ours) stay. Returns the
 * first failure.
 */
export async function destroyIpsets(runner: CommandRunner, logger: Logger): Promise<Error | null> {
  const listArgs = ["list", "-n"];
  const listed = await runner({ cmd: "ipset", args: listArgs });
  if (listed.code === COMMAND_NOT_FOUND) {
    logger.debug(2, "ipset not found, no ipsets to clean up");
    return null;
  }
  if (listed.code !== 0) {
    logger.error("Error listing ipsets", { stderr: listed.stderr.trim() });
    return new CommandError("ipset", listArgs, listed.code, listed.stderr);
  }
  let first: Error | null = null;
  for (const name of parseIpsetNames(listed.stdout)) {
    if (!KUBE_IPSET_NAMES.has(name)) continue;
    const args = ["destroy", name];
    const out = await runner({ cmd: "ipset", args });
    if (out.code !== 0) {
      logger.error("Error removing ipset", { ipset: name, stderr: out.stderr.trim() });
      first ??= new CommandError("ipset", args, out.code, out.stderr);
      continue;
    }
    logger.info("Destroyed ipset", { ipset: name });
  }
  return first;
}

/**
 * Removes IPVS mode's kernel state: virtual servers, the `kube-ipvs0` device and the KUBE
 * ipsets. Absent state is success; each failure is logged, the other steps still run, and
 * the first failure is thrown at the end.
 */
export async function cleanupIpvs(
  runner: CommandRunner = denoCommandRunner,
  logger: Logger = silentLogger,
): Promise<void> {
  let first: Error | null = null;
  for (const step of [clearVirtualServers, deleteIpvsDevice, destroyIpsets]) {
    const failure = await step(runner, logger);
    first ??= failure;
  }
  if (first !== null) throw first;
}
