/** A node for cleanup tests: the iptables fake and the netadmin fake behind one runner. */
import { KUBE_IPVS_DEVICE } from "../../lib/backends/ipvs/cleanup.ts";
import type { CommandRunner } from "../../lib/exec/mod.ts";
import { createFakeIptables, type FakeIptables } from "./fake_iptables.ts";
import { createFakeNetadmin, type FakeNetadmin } from "./fake_netadmin.ts";

/**
 * One node: the iptables fake for ip(6)tables*, the netadmin fake for the rest. As in the
 * kernel, a set is in use while an iptables rule matches it (`--match-set NAME`).
 */
export function fakeNode() {
  const ipt = createFakeIptables();
  const net = createFakeNetadmin({ ipvs: false });
  const references = (set: string) =>
    ["legacy", "nft"].flatMap((f) => ["IPv4", "IPv6"].map((fam) => ipt.save(f, fam as "IPv4")))
      .join("").split("\n").filter((l) => l.includes(`--match-set ${set} `)).length;
  const run: CommandRunner = (input) => {
    if (/tables/.test(input.cmd)) return ipt.run(input);
    if (input.cmd === "ipset" && input.args[0] === "destroy") {
      const set = net.ipsets.get(input.args[1] ?? "");
      if (set) set.references = references(input.args[1]!);
    }
    return net.run(input);
  };
  return { ipt, net, run };
}

/** The state every mode leaves: iptables + ipset rules (IPVS mode), nft tables, kube-ipvs0. */
export function seedEveryMode(ipt: FakeIptables, net: FakeNetadmin) {
  ipt.restore(
    "legacy",
    "IPv4",
    "*nat\n:KUBE-SERVICES - [0:0]\n" +
      "-A PREROUTING -j KUBE-SERVICES\n" +
      "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT\nCOMMIT\n",
  );
  net.ipsets.set("KUBE-CLUSTER-IP", { type: "hash:ip,port", references: 0 });
  net.ipsets.set("my-allowlist", { type: "hash:net", references: 0 });
  net.nftTables.set("ip kube-proxy", new Set(["services"]));
  net.nftTables.set("ip6 kube-proxy", new Set(["services"]));
  net.nftTables.set("inet filter", new Set(["input"]));
  net.links.set(KUBE_IPVS_DEVICE, "dummy");
}
