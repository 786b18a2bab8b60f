/**
 * ClientIP session affinity in nftables mode with real packets: a client sticks to one
 * endpoint while its entry in that endpoint's `affinity-` set lives; the entry carries the
 * service's timeout and expires on its own (nothing from the proxy removes it), after which
 * the client's next connection is balanced afresh and can land on the other endpoint.
 * The proxier programs the node namespace directly. Needs root and nft; fails loudly without.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import { createNftablesProxier } from "../../lib/backends/nftables/proxier.ts";
import { createTopology, requireCommands, type Topology } from "../../scripts/netns/mod.ts";
import { ep, sps, state, svc } from "../backends/iptables/state_fixtures.ts";
import { eventually } from "./support/proxy_process.ts";
import { topologyRunner } from "./support/node_runner.ts";

const POD_A = "10.0.1.2", POD_B = "10.0.2.2", CLIENT = "10.0.3.2";
const TIMEOUT_S = 2;

/** `set name -> elements` of the family's kube-proxy table, as `nft -j list sets` gives them. */
async function affinitySets(topo: Topology): Promise<Map<string, string[]>> {
  const out = await topo.exec("node", "nft", ["-j", "list", "sets", "ip"]);
  assert.equal(out.code, 0, out.stderr);
  const doc = JSON.parse(out.stdout) as { nftables: { set?: Record<string, unknown> }[] };
  const sets = new Map<string, string[]>();
  for (const item of doc.nftables) {
    const s = item.set;
    if (s === undefined || s.table !== "kube-proxy") continue;
    if (!String(s.name).startsWith("affinity-")) continue;
    assert.equal(s.timeout, TIMEOUT_S, `set ${s.name} carries the service's timeout`);
    const elems = (s.elem as unknown[] | undefined) ?? [];
    // Elements with a timeout print as { elem: { val, timeout, expires } }.
    sets.set(
      String(s.name),
      elems.map((e) =>
        typeof e === "string" ? e : String((e as { elem: { val: string } }).elem.val)
      ),
    );
  }
  return sets;
}

/** Which pod one new connection from the client reaches. */
async function once(topo: Topology): Promise<string> {
  const [a] = await topo.probe({ from: "client", proto: "tcp", to: "172.30.0.12:80" });
  assert.ok(a?.ok, JSON.stringify(a));
  return a.name;
}

Deno.test("e2e [nftables]: ClientIP affinity sticks, its set element expires after timeoutSeconds, then the client is re-balanced", async () => {
  requireCommands(["ip", "nft"]);
  const topo = await createTopology({
    prefix: "nfaff",
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }, {
      name: "client",
      ip: CLIENT,
    }],
  });
  try {
    await topo.startEchoServers();
    const runner = topologyRunner(topo);
    const proxier = createNftablesProxier({ family: "IPv4", runner, clusterCIDRs: ["10.0.0.0/8"] });
    await proxier.sync(state([
      sps(svc({ name: "sticky", clusterIP: "172.30.0.12", stickyMaxAgeSeconds: TIMEOUT_S }), [
        ep(POD_A, 8080, { isLocal: true }),
        ep(POD_B, 8080, { isLocal: true }),
      ]),
    ]));
    const empty = await affinitySets(topo);
    assert.equal(empty.size, 2, "one affinity set per endpoint");
    assert.deepEqual([...empty.values()].flat(), [], "no client remembered yet");

    // Back-to-back connections (new source ports each) stay on one pod.
    const burst = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.12:80",
      count: 10,
      concurrency: 1,
    });
    const names = new Set(burst.map((a) => (a.ok ? a.name : `error:${a.error}`)));
    assert.equal(names.size, 1, `one pod for every connection: ${[...names]}`);
    const first = [...names][0]!;
    assert.ok(!first.startsWith("error"), first);
    const remembered = await affinitySets(topo);
    const holding = [...remembered].filter(([, elems]) => elems.includes(CLIENT));
    assert.equal(holding.length, 1, `exactly one set remembers the client: ${[...remembered]}`);

    // Left alone, the element times out in the kernel.
    await eventually("the affinity element to expire", 3000 * TIMEOUT_S, async () => {
      return [...(await affinitySets(topo)).values()].flat().length === 0;
    });

    // After each expiry a new connection is balanced by its source port again, so the client
    // reaches the other pod within a few rounds (each round lands on either at 1/2).
    const seen = new Set([first]);
    for (let round = 0; round < 12 && seen.size < 2; round++) {
      await eventually("the element to expire", 3000 * TIMEOUT_S, async () => {
        return [...(await affinitySets(topo)).values()].flat().length === 0;
      });
      seen.add(await once(topo));
    }
    assert.deepEqual([...seen].sort(), ["pod-a", "pod-b"], "re-balanced after expiry");
  } catch (err) {
    console.error(topo.logs());
    throw err;
  } finally {
    await topo.destroy();
  }
});
