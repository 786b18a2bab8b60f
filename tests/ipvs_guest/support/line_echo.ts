/**
 * Starting line_echo_server.ts in a pod: one process serving held connections on HOLD_PORT and
 * one-line echo on TCP 8080 and the given UDP ports (each deno start-up costs seconds in the
 * emulated guest, so a pod runs one).
 */
import type { SpawnedProcess, Topology } from "../../../scripts/netns/mod.ts";

const LINE_ECHO = decodeURIComponent(new URL("./line_echo_server.ts", import.meta.url).pathname);

/** The port the line echo servers keep connections open on. */
export const HOLD_PORT = 9090;

/** Spawns the line echo server in `pod`, answering one-line echo on TCP 8080 and `udpPorts`. */
export function spawnLineEcho(
  topo: Topology,
  pod: string,
  udpPorts: readonly number[],
  label: string,
): SpawnedProcess {
  return topo.spawn(pod, Deno.execPath(), [
    "run",
    "--no-config",
    "--allow-net",
    LINE_ECHO,
    "--name",
    pod,
    "--port",
    String(HOLD_PORT),
    "--tcp",
    "8080",
    "--udp",
    udpPorts.join(","),
  ], { label });
}
