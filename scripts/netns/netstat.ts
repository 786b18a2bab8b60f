/**
 * A namespace's own TCP counters from `/proc/net/netstat`, which the kernel keeps per network
 * namespace: how many SYNs its sockets retransmitted (TcpExt TCPSynRetrans). A SYN is sent
 * again only when its SYN-ACK did not come within the retransmission timeout (1 s first), so
 * a count that rose over a window says a connection attempt was lost on the way and recovered
 * by the client's kernel, which a long attempt timeout would otherwise hide.
 */
import type { NamespaceRef, Topology } from "./topology.ts";

/**
 * The value of counter `name` in group `group` ("TcpExt") of a `/proc/net/netstat` text, whose
 * groups come as a line of names and a line of values; null when the text has no such counter.
 */
export function netstatCounter(text: string, group: string, name: string): number | null {
  const lines = text.split("\n").filter((l) => l.startsWith(`${group}: `));
  for (let i = 0; i + 1 < lines.length; i += 2) {
    const names = lines[i]!.split(/\s+/).slice(1);
    const values = lines[i + 1]!.split(/\s+/).slice(1);
    const at = names.indexOf(name);
    if (at >= 0 && /^\d+$/.test(values[at] ?? "")) return Number(values[at]);
  }
  return null;
}

/** How many SYNs the sockets of namespace `ref` have retransmitted since it was created. */
export async function synRetransmits(topo: Topology, ref: NamespaceRef): Promise<number> {
  const out = await topo.exec(ref, "cat", ["/proc/net/netstat"]);
  if (out.code !== 0) {
    throw new Error(`Cannot read /proc/net/netstat in "${ref}": cat exited ${out.code}`);
  }
  const count = netstatCounter(out.stdout, "TcpExt", "TCPSynRetrans");
  if (count === null) throw new Error(`No TcpExt TCPSynRetrans counter in "${ref}"`);
  return count;
}
