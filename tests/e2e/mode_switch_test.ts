/**
 * Taking over a node without a blip, with real packets: while a client in a pod opens a TCP
 * connection to a ClusterIP every 20 ms and sends a UDP datagram every 100 ms from one source
 * port, the node switches from one rule set to another: upstream's iptables rules (ours render
 * the same, applied with iptables-restore and no program running) to our iptables or nftables
 * mode, and between our iptables and nftables modes (the old program stopped with SIGTERM,
 * which leaves its rules, then the new one started on the same state). Each switch must lose
 * no connection, keep the UDP flow's conntrack entry (same id) and its endpoint, leave no
 * answered-traffic gap over 1 s, and end with none of the old mode's rules left. The counts are
 * printed (support/mode_switch.ts; the IPVS pairs run in the IPVS guest,
 * tests/ipvs_guest/mode_switch_guest.ts). Namespaces `sw1*` and `sw2*`. Needs root, iptables
 * (legacy and nft), nft and conntrack; fails loudly without them.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import type { Topology } from "../../scripts/netns/mod.ts";
import {
  applyUpstreamRules,
  iptablesChains,
  kubeProxyTables,
  SWITCH_CLUSTER,
  SWITCH_PODS,
  switchUnderTraffic,
} from "./support/mode_switch.ts";
import type { ManifestDir } from "./support/proxy_process.ts";
import { withTopology } from "./support/with_topology.ts";

type Mode = "iptables" | "nftables";

/** The old mode's leftovers after switching to `to` (empty once it is clean). */
function leftoversOf(to: Mode, topo: Topology): () => Promise<string[]> {
  return () => to === "nftables" ? iptablesChains(topo) : kubeProxyTables(topo);
}

function scenario(prefix: string, body: (topo: Topology, dir: ManifestDir) => Promise<void>) {
  return withTopology({
    prefix,
    ipv6: false,
    pods: [...SWITCH_PODS],
    flavour: "nft",
    requireCommands: ["conntrack"],
  }, async ({ topo, dir }) => {
    await dir.write("cluster.json", SWITCH_CLUSTER);
    await topo.startEchoServers({ pods: ["pod-a", "pod-b"] });
    await body(topo, dir);
  });
}

Deno.test("e2e: upstream's iptables rules -> iptables -> nftables -> iptables, no connection lost", async () => {
  await scenario("sw1", async (topo, dir) => {
    await applyUpstreamRules(topo, dir);
    const iptables = await switchUnderTraffic(topo, dir, {
      label: "upstream iptables rules -> iptables",
      from: null,
      to: "iptables",
      udpSourcePort: 40001,
      leftovers: leftoversOf("iptables", topo),
    });
    const nftables = await switchUnderTraffic(topo, dir, {
      label: "iptables -> nftables",
      from: iptables.proxy,
      to: "nftables",
      udpSourcePort: 40002,
      leftovers: leftoversOf("nftables", topo),
    });
    await switchUnderTraffic(topo, dir, {
      label: "nftables -> iptables",
      from: nftables.proxy,
      to: "iptables",
      udpSourcePort: 40003,
      leftovers: leftoversOf("iptables", topo),
    });
  });
});

Deno.test("e2e: upstream's iptables rules -> nftables, no connection lost", async () => {
  await scenario("sw2", async (topo, dir) => {
    await applyUpstreamRules(topo, dir);
    await switchUnderTraffic(topo, dir, {
      label: "upstream iptables rules -> nftables",
      from: null,
      to: "nftables",
      udpSourcePort: 40004,
      leftovers: leftoversOf("nftables", topo),
    });
  });
});
