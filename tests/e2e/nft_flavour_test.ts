/**
 * On a node kubelet marked as iptables-nft (KUBE-IPTABLES-HINT in nft's mangle table), the
 * program detects nft and programs nf_tables only: services work, the rules show in
 * `iptables-nft-save` and `nft list ruleset`, none in `iptables-legacy-save`, and `--cleanup`
 * removes them all again. Needs root, iptables-nft and nft; fails loudly without them.
 * IP plan: node 192.168.0.2 (node1), local pods 10.0.1.2 / 10.0.2.2 / 10.0.3.2, services
 * 172.30.0.0/16, external client 203.0.113.2.
 */
import assert from "node:assert/strict";
import { type Topology, TOPOLOGY_IPS } from "../../scripts/netns/mod.ts";
import { list, node1 } from "./support/cluster_objects.ts";
import { checkFlows } from "./support/flow_check.ts";
import { type FlowPort, flowService, flowSlice, local } from "./support/flow_objects.ts";
import { mentionsProxyChain } from "./support/kube_chains.ts";
import { runProxyOnce } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

const HTTP: FlowPort = { name: "http", port: 80, targetPort: 8080, nodePort: 30160 };
const EMPTY: FlowPort = { name: "http", port: 80, targetPort: 8080 };

const STATE = list([
  node1(),
  flowService("demo", "web", "172.30.0.60", [HTTP], { type: "NodePort" }),
  flowSlice("demo", "web", "web-1", [local("10.0.1.2"), local("10.0.2.2")], [HTTP]),
  flowService("demo", "empty", "172.30.0.61", [EMPTY]),
  flowSlice("demo", "empty", "empty-1", [], [EMPTY]),
]);

/** Lines of `cmd`'s output in the node namespace that mention one of our KUBE- chains. */
async function kubeLines(topo: Topology, cmd: string, args: string[]): Promise<string[]> {
  const out = await topo.exec("node", cmd, args);
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout.split("\n").filter(mentionsProxyChain);
}

Deno.test("e2e: on an iptables-nft node the program uses nf_tables only, and --cleanup empties it", async () => {
  await withProxy({
    prefix: "sx2",
    ipv6: false,
    flavour: "nft",
    pods: [{ name: "pod-a", ip: "10.0.1.2" }, { name: "pod-b", ip: "10.0.2.2" }, {
      name: "client",
      ip: "10.0.3.2",
    }],
    state: STATE,
    echo: { tcp: [8080], udp: [8080] },
  }, async ({ topo, proxy }) => {
    assert.match(proxy.output(), /"Using iptables proxy" flavour="nft"/);
    await checkFlows(topo, [
      {
        name: "pod -> clusterIP",
        from: "client",
        to: "172.30.0.60:80",
        expect: ["pod-a", "pod-b"],
        masq: false,
      },
      {
        name: "pod -> clusterIP without endpoints",
        from: "client",
        to: "172.30.0.61:80",
        expect: "refused",
      },
      {
        name: "external -> NodePort",
        from: "external",
        to: `${TOPOLOGY_IPS.node}:30160`,
        expect: ["pod-a", "pod-b"],
        masq: true,
      },
    ]);

    const nftSave = await kubeLines(topo, "iptables-nft-save", []);
    assert.ok(
      nftSave.some((l) => /^-A KUBE-SERVICES .*-d 172\.30\.0\.60\/32/.test(l)),
      nftSave.join("\n"),
    );
    assert.ok(
      nftSave.some((l) => /^-A KUBE-SERVICES .*-j REJECT/.test(l)),
      "REJECT rule in nft filter",
    );
    const ruleset = await kubeLines(topo, "nft", ["list", "ruleset"]);
    assert.ok(ruleset.some((l) => /chain KUBE-NODEPORTS/.test(l)), ruleset.join("\n"));
    assert.ok((await kubeLines(topo, "ip6tables-nft-save", [])).length > 0, "IPv6 proxier in nft");
    for (const cmd of ["iptables-legacy-save", "ip6tables-legacy-save"]) {
      assert.deepEqual(await kubeLines(topo, cmd, []), [], `${cmd} must hold none of our rules`);
    }

    await proxy.kill(2000);
    const cleanup = await runProxyOnce(topo, ["--cleanup"]);
    assert.equal(cleanup.code, 0, cleanup.stderr);
    for (const cmd of ["iptables-nft-save", "ip6tables-nft-save", "iptables-legacy-save"]) {
      assert.deepEqual(await kubeLines(topo, cmd, []), [], `${cmd} after --cleanup`);
    }
    assert.deepEqual(await kubeLines(topo, "nft", ["list", "ruleset"]), [], "nft after --cleanup");
    const hint = await topo.exec("node", "iptables-nft-save", ["-t", "mangle"]);
    assert.match(hint.stdout, /^:KUBE-IPTABLES-HINT/m, "kubelet's hint chain stays");
  });
});
