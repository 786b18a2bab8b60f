/**
 * What IPVS mode programmed in a topology's node namespace, read with the node's own tools
 * (`ipvsadm -Ln`/`-Sn`, `ip addr`, `ipset`, `iptables-save`) for the guest tests' assertions.
 */
import assert from "node:assert/strict";
import type { Topology } from "../../../scripts/netns/mod.ts";
import { parseIpvsadmList } from "../../../lib/backends/ipvs/ipvsadm_parser.ts";
import {
  type RealServer,
  type VirtualServerState,
} from "../../../lib/backends/ipvs/virtual_server.ts";

/** Runs a command in the node namespace; a non-zero exit fails the test. */
export async function onNode(topo: Topology, cmd: string, args: readonly string[]) {
  const out = await topo.exec("node", cmd, args);
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")} exited ${out.code}: ${out.stderr}`);
  return out.stdout;
}

/** `ipvsadm -Ln` as virtual servers keyed `ip:port/PROTO`, connection counts included. */
export async function ipvsList(topo: Topology): Promise<ReadonlyMap<string, VirtualServerState>> {
  return parseIpvsadmList(await onNode(topo, "ipvsadm", ["-Ln"])).table;
}

/** The real servers of one virtual server (`172.30.0.50:80/TCP`), or null when it is absent. */
export async function realServers(
  topo: Topology,
  vsKey: string,
): Promise<ReadonlyMap<string, RealServer> | null> {
  return (await ipvsList(topo)).get(vsKey)?.realServers ?? null;
}

/** `addr:port weight` for each real server, sorted: what a test compares. */
export function weights(reals: ReadonlyMap<string, RealServer> | null): string[] {
  if (reals === null) return ["(no virtual server)"];
  return [...reals.entries()].map(([k, rs]) => `${k} w${rs.weight}`).sort();
}

/** `ipvsadm -Sn` lines, sorted. */
export async function ipvsSave(topo: Topology): Promise<string[]> {
  return (await onNode(topo, "ipvsadm", ["-Sn"])).split("\n").filter((l) => l !== "").sort();
}

/** The addresses on kube-ipvs0 (`172.30.0.50/32`), sorted; null when the device is absent. */
export async function kubeIpvs0Addresses(topo: Topology): Promise<string[] | null> {
  const out = await topo.exec("node", "ip", ["-j", "addr", "show", "dev", "kube-ipvs0"]);
  if (out.code !== 0) return null;
  const links = JSON.parse(out.stdout) as { addr_info?: { local: string; prefixlen: number }[] }[];
  return links.flatMap((l) => l.addr_info ?? []).map((a) => `${a.local}/${a.prefixlen}`).sort();
}

/** The members of one ipset, sorted (`ipset list NAME`). */
export async function ipsetMembers(topo: Topology, set: string): Promise<string[]> {
  const text = await onNode(topo, "ipset", ["list", set]);
  const at = text.indexOf("Members:\n");
  assert.ok(at >= 0, `No members section in "ipset list ${set}": ${text}`);
  return text.slice(at + "Members:\n".length).split("\n").filter((l) => l.trim() !== "").sort();
}

/** The names of every ipset on the node. */
export async function ipsetNames(topo: Topology): Promise<string[]> {
  return (await onNode(topo, "ipset", ["list", "-n"])).split("\n").filter((l) => l !== "");
}

/** `table:chain` for every chain named KUBE-* in every table of every iptables the node has. */
export async function kubeChains(topo: Topology): Promise<string[]> {
  const found: string[] = [];
  for (const save of ["iptables-legacy-save", "ip6tables-legacy-save"]) {
    let table = "";
    for (const line of (await onNode(topo, save, [])).split("\n")) {
      if (line.startsWith("*")) table = line.slice(1);
      const m = /^:(KUBE-\S+)/.exec(line);
      if (m) found.push(`${save}:${table}:${m[1]}`);
    }
  }
  return found.sort();
}
