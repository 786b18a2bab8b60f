/** Reads of what nftables mode programmed in a topology's node namespace. */
import assert from "node:assert/strict";
import type { Topology } from "../../../scripts/netns/mod.ts";

/** The rules of the IPv4 kube-proxy table's cluster-ips-check chain (fails if it is missing). */
export async function clusterIPsCheck(topo: Topology): Promise<string> {
  const r = await topo.exec("node", "nft", [
    "list",
    "chain",
    "ip",
    "kube-proxy",
    "cluster-ips-check",
  ]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout;
}
