/**
 * `trace` against a live node: the real program runs in iptables mode on deploy/examples in a
 * network namespace; `trace` reads the kernel's rules and agrees (exit 0, the demo's endpoints),
 * then disagrees in plain words (exit 3) once the rules are changed behind the proxy's back and
 * once the cluster state moves on while the proxy is stopped. Needs root; fails loudly without.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { Topology } from "../../scripts/netns/mod.ts";
import { runProxyOnce } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

const EXAMPLES = new URL("../../deploy/examples/cluster.yaml", import.meta.url);
const POD_A = "10.0.1.2", POD_B = "10.0.2.2", CLIENT = "10.0.3.2";

function trace(topo: Topology, manifests: string, extra: readonly string[] = []) {
  return runProxyOnce(topo, [
    "trace",
    `--manifests=${manifests}`,
    "--hostname-override=node1",
    "--cluster-cidr=10.0.0.0/8",
    `--from=${CLIENT}`,
    "--to=172.30.0.10:80",
    ...extra,
  ]);
}

/** The demo state without `ip` among web's endpoints. */
function withoutEndpoint(state: { items: Record<string, unknown>[] }, ip: string) {
  const items = state.items.map((item) => {
    const slice = item as { kind?: string; endpoints?: { addresses: string[] }[] };
    if (slice.kind !== "EndpointSlice" || slice.endpoints === undefined) return item;
    return { ...item, endpoints: slice.endpoints.filter((e) => !e.addresses.includes(ip)) };
  });
  return { ...state, items };
}

Deno.test("e2e: trace agrees with a live iptables node, then names what changed behind it", async () => {
  const state = parse(await Deno.readTextFile(EXAMPLES));
  await withProxy({
    prefix: "tctrace",
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }, {
      name: "client",
      ip: CLIENT,
    }],
    state,
  }, async ({ topo, dir, proxy }) => {
    await proxy.waitForOutput("SyncProxyRules complete", 30_000);

    const agree = await trace(topo, dir.path);
    assert.equal(agree.code, 0, agree.stdout + agree.stderr);
    assert.match(agree.stdout, /decision: forward demo\/web:http to 2 endpoint\(s\)/);
    assert.match(agree.stdout, /10\.0\.1\.2:8080 +50\.0%/);
    assert.match(agree.stdout, /10\.0\.2\.2:8080 +50\.0%/);
    assert.match(agree.stdout, /rules: +iptables rules read from the kernel/);
    assert.match(agree.stdout, /the rules agree with the cluster state/);
    const answers = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.10:80",
      count: 30,
    });
    assert.deepEqual([...new Set(answers.map((a) => a.ok ? a.name : a.error))].sort(), [
      "pod-a",
      "pod-b",
    ]);

    // Behind the proxy's back: pod-a's KUBE-SEP chain loses its DNAT rule.
    const saved = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
    const dnat = saved.stdout.split("\n").find((l) =>
      l.startsWith("-A KUBE-SEP-") && l.includes(`--to-destination ${POD_A}:8080`)
    );
    assert.ok(dnat !== undefined, saved.stdout);
    const chain = dnat.split(" ")[1]!;
    const position = saved.stdout.split("\n").filter((l) => l.startsWith(`-A ${chain} `))
      .indexOf(dnat) + 1;
    const del = await topo.exec("node", "iptables-legacy", [
      "-t",
      "nat",
      "-D",
      chain,
      String(position),
    ]);
    assert.equal(del.code, 0, del.stderr);
    const lost = await trace(topo, dir.path);
    assert.equal(lost.code, 3, lost.stdout + lost.stderr);
    assert.match(lost.stdout, /the rules DISAGREE with the cluster state/);
    assert.match(
      lost.stdout,
      /rules never send demo\/web:http to 10\.0\.1\.2:8080, which is an endpoint/,
    );
    const json = await trace(topo, dir.path, ["--output=json"]);
    assert.equal(json.code, 3);
    assert.equal(JSON.parse(json.stdout).agree, false);

    // The proxy stops; the cluster state moves on without pod-b.
    await proxy.kill();
    await dir.write("cluster.json", withoutEndpoint(state, POD_B));
    const stale = await trace(topo, dir.path);
    assert.equal(stale.code, 3, stale.stdout + stale.stderr);
    assert.match(
      stale.stdout,
      /rules send demo\/web:http to 10\.0\.2\.2:8080, which is no longer an endpoint/,
    );

    // Bad input: an IPv6 packet against this IPv4-only node.
    const v6 = await runProxyOnce(topo, [
      "trace",
      `--manifests=${dir.path}`,
      "--hostname-override=node1",
      "--from=fd00::5",
      "--to=[fd00:30::10]:80",
    ]);
    assert.equal(v6.code, 1, v6.stdout + v6.stderr);
    // The logger escapes the quotes of the message.
    assert.match(v6.stderr, /Invalid --to \\?"fd00:30::10\\?": the node has no IPv6 address/);
  });
});
