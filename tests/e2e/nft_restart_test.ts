/**
 * A restart on iptables-nft against the real kernel: the first sync of a new proxier leaves the
 * chains a previous run left as they render, rewrites only what changed, and ends with the same
 * rules as a fresh full sync of that state. Namespaces `knr-a` and `knr-b`. Needs root, iproute2
 * and iptables-nft; fails loudly without them.
 */
import assert from "node:assert/strict";
import { createIptablesProxier } from "../../lib/backends/iptables/proxier.ts";
import { denoCommandRunner } from "../../lib/exec/mod.ts";
import type { ProxyState } from "../../lib/proxy/mod.ts";
import { addNamespaces, deleteNamespaces, requireCommands } from "../../scripts/netns/mod.ts";
import { ep, sps, state, svc } from "../backends/iptables/state_fixtures.ts";
import { netnsExecRunner } from "../support/netns_runner.ts";
import { payloadRecorder } from "../support/payload_recorder.ts";

/** Services of many shapes, plus `plain` ordinary ones. */
function services(plain: number, moved = false): ProxyState {
  const ports = [
    sps(svc({ name: "sticky", stickyMaxAgeSeconds: 10800 }), [
      ep("10.180.0.1"),
      ep(moved ? "10.180.0.9" : "10.180.0.2"),
    ]),
    sps(
      svc({
        name: "lb",
        clusterIP: "172.30.0.42",
        nodePort: 30080,
        externalIPs: ["192.168.9.9"],
        loadBalancerIPs: ["1.2.3.4"],
        loadBalancerSourceRanges: ["5.6.7.0/24"],
        externalPolicyLocal: true,
        healthCheckNodePort: 30999,
      }),
      [ep("10.180.0.3", 80, { isLocal: true }), ep("10.180.0.4")],
    ),
    sps(svc({ name: "dns", clusterIP: "172.30.0.43", protocol: "UDP", port: 53 }), [
      ep("10.180.0.5", 53),
    ]),
    sps(svc({ name: "none", clusterIP: "172.30.0.44" }), []),
  ];
  for (let i = 0; i < plain; i++) {
    ports.push(
      sps(svc({ name: `s${i}`, clusterIP: `172.30.1.${i + 1}` }), [
        ep(`10.181.0.${i + 1}`),
        ep(`10.182.0.${i + 1}`),
      ]),
    );
  }
  return state(ports);
}

/** The nat table as listed, chain by chain (nft lists chains in no fixed order). */
async function natByChain(ns: string): Promise<Map<string, string[]>> {
  const out = await denoCommandRunner({
    cmd: "ip",
    args: ["netns", "exec", ns, "iptables-nft", "-t", "nat", "-S"],
  });
  assert.equal(out.code, 0, out.stderr);
  const byChain = new Map<string, string[]>();
  for (const line of out.stdout.split("\n")) {
    const chain = /^-[NPA] (\S+)/.exec(line)?.[1];
    if (chain === undefined) continue;
    if (!byChain.has(chain)) byChain.set(chain, []);
    if (line.startsWith("-A ")) byChain.get(chain)!.push(line);
  }
  return new Map([...byChain].sort(([a], [b]) => a < b ? -1 : 1));
}

Deno.test("e2e [iptables-nft]: a restart rewrites only what changed and ends as a fresh full sync", async () => {
  requireCommands(["iptables-nft", "iptables-nft-restore"]);
  const [a, b] = ["knr-a", "knr-b"];
  await deleteNamespaces([a, b]);
  await addNamespaces([a, b]);
  try {
    const recorder = payloadRecorder(netnsExecRunner(a));
    const proxier = () =>
      createIptablesProxier({ family: "IPv4", flavour: "nft", runner: recorder.run });
    await proxier().sync(services(20));
    const first = await natByChain(a);

    // The same state after a restart: no chain of ours is written again.
    const restarted = proxier();
    await restarted.prepareFirstSync!();
    assert.equal((await restarted.sync(services(20))).full, true);
    const nat = (input: string) => input.slice(0, input.indexOf("*filter"));
    assert.equal(nat(recorder.lastRestore()), "*nat\n:KUBE-PROXY-CANARY - [0:0]\nCOMMIT\n");
    assert.deepEqual(await natByChain(a), first);

    // Changed while down: one endpoint moved, the last plain service gone.
    const again = proxier();
    await again.prepareFirstSync!();
    await again.sync(services(19, true));
    const written = nat(recorder.lastRestore());
    assert.match(written, /10\.180\.0\.9/);
    assert.doesNotMatch(written, /10\.181\.0\.1\b/, "an unchanged service is left alone");
    const fresh = createIptablesProxier({
      family: "IPv4",
      flavour: "nft",
      runner: netnsExecRunner(b),
    });
    await fresh.sync(services(19, true));
    assert.deepEqual(await natByChain(a), await natByChain(b));
  } finally {
    await deleteNamespaces([a, b]);
  }
});
