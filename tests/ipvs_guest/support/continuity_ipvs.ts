/**
 * What the IPVS continuity cases print about the kernel: the IPVS sysctls IPVS mode leaves or
 * sets on the node (conn_reuse_mode and its neighbours), and the states of one virtual
 * server's connections in IPVS's table (`ipvsadm -Lnc`), to show the port-reuse case's ports
 * came back while IPVS still held their last connection.
 */
import { splitHostPort } from "../../../lib/backends/ipvs/ipvsadm_parser.ts";
import type { Topology } from "../../../scripts/netns/mod.ts";
import { onNode } from "./ipvs_node.ts";

/** The node's IPVS sysctls the port-reuse case runs under, and the kernel they apply to. */
export async function ipvsSysctls(topo: Topology): Promise<string> {
  const names = [
    "net.ipv4.vs.conn_reuse_mode",
    "net.ipv4.vs.expire_nodest_conn",
    "net.ipv4.vs.expire_quiescent_template",
    "net.ipv4.vs.conntrack",
  ];
  const values = await Promise.all(
    names.map(async (n) => `${n}=${(await onNode(topo, "sysctl", ["-n", n])).trim()}`),
  );
  const kernel = (await onNode(topo, "sysctl", ["-n", "kernel.osrelease"])).trim();
  return `kernel ${kernel}: ${values.join(" ")}`;
}

/**
 * How many of `vs`'s connections (`172.30.0.30:80`) IPVS lists in each TCP state, and of the
 * source ports `FIRST-LAST` whose connections have all ended (none open right now), how many
 * IPVS still holds in TIME_WAIT: the entry a port's next connection meets.
 */
export async function ipvsConnectionStates(
  topo: Topology,
  vs: string,
  sourcePorts: string,
): Promise<string> {
  const [first, last] = sourcePorts.split("-").map(Number) as [number, number];
  const states = new Map<string, number>();
  const byPort = new Map<number, Set<string>>();
  for (const line of (await onNode(topo, "ipvsadm", ["-Lnc"])).split("\n")) {
    const [pro, , state, source, virtual] = line.trim().split(/\s+/);
    const client = splitHostPort(source ?? "");
    if (pro !== "TCP" || virtual !== vs || state === undefined || client === null) continue;
    states.set(state, (states.get(state) ?? 0) + 1);
    if (client.port < first || client.port > last) continue;
    byPort.set(client.port, (byPort.get(client.port) ?? new Set()).add(state));
  }
  const ended = [...byPort.values()].filter((s) => [...s].every((x) => ENDED.has(x)));
  const waiting = ended.filter((s) => s.has("TIME_WAIT")).length;
  const listed = [...states].sort().map(([s, n]) => `${s} ${n}`).join(", ");
  return `IPVS connections of ${vs}: ${listed || "none"}; of the pool's ports with no open ` +
    `connection, ${waiting} of ${ended.length} are held in TIME_WAIT`;
}

/** IPVS TCP states of a connection that has ended. */
const ENDED: ReadonlySet<string> = new Set(["TIME_WAIT", "CLOSE"]);

/** What IPVS mode raises nf_conntrack_max to on a one-CPU node (upstream's 128 Ki minimum). */
const NODE_CONNTRACK_MAX = 131072;
const CONNTRACK_MAX = "net.netfilter.nf_conntrack_max";

/**
 * Runs `body` with the guest's nf_conntrack_max raised to what the proxy sets on a real node,
 * then restores it. The guest's 1 GiB makes the kernel's default about 8,000 entries, which
 * 50 connections/s fill within TIME_WAIT's 2 minutes; the proxy cannot raise it from the
 * topology's node namespace (the sysctl is read-only outside the initial one), as it does
 * when it runs in a real node's.
 */
export async function withConntrackMax<T>(body: () => Promise<T>): Promise<T> {
  const read = async () => {
    const out = await new Deno.Command("sysctl", { args: ["-n", CONNTRACK_MAX] }).output();
    if (out.code !== 0) throw new Error(`Cannot read ${CONNTRACK_MAX}: sysctl exited ${out.code}`);
    return new TextDecoder().decode(out.stdout).trim();
  };
  const write = async (value: string) => {
    const out = await new Deno.Command("sysctl", { args: ["-w", `${CONNTRACK_MAX}=${value}`] })
      .output();
    if (out.code !== 0) throw new Error(`Cannot set ${CONNTRACK_MAX}=${value}: exit ${out.code}`);
  };
  const before = await read();
  await write(String(Math.max(Number(before), NODE_CONNTRACK_MAX)));
  try {
    return await body();
  } finally {
    await write(before);
  }
}

/** The guest's MemAvailable, as `/proc/meminfo` says it (`412 MiB available`). */
export async function memAvailable(): Promise<string> {
  const m = /^MemAvailable:\s+(\d+) kB/m.exec(await Deno.readTextFile("/proc/meminfo"));
  return m ? `${Math.round(Number(m[1]) / 1024)} MiB available` : "MemAvailable unknown";
}
