import assert from "node:assert/strict";
import { createLeftoverRemoval } from "../../lib/app/leftover_removal.ts";
import { silentLogger } from "../../lib/log/mod.ts";
import { state } from "../backends/iptables/state_fixtures.ts";
import { fakeNode, seedEveryMode } from "../support/fake_node.ts";

Deno.test("createLeftoverRemoval() keeps the old mode's rules until every family has synced, then removes them once", async () => {
  const { ipt, net, run } = fakeNode();
  seedEveryMode(ipt, net);
  const removal = createLeftoverRemoval({
    mode: "nftables",
    families: ["IPv4", "IPv6"],
    runner: run,
    logger: silentLogger,
  });
  await removal.afterSync([]);
  await removal.afterSync([state([], { family: "IPv4" })]);
  assert.equal(removal.done, false, "IPv6 has not synced yet");
  assert.match(ipt.save("legacy", "IPv4"), /KUBE-SERVICES/, "iptables mode's rules still route");

  await removal.afterSync([state([], { family: "IPv4" }), state([], { family: "IPv6" })]);
  assert.equal(removal.done, true);
  assert.doesNotMatch(ipt.save("legacy", "IPv4"), /KUBE-SERVICES/);
  assert.ok(!net.ipsets.has("KUBE-CLUSTER-IP"), "IPVS mode's sets go too");
  assert.ok(net.nftTables.has("ip kube-proxy"), "its own table stays");

  // Once done, later syncs leave whatever appears alone (it is not a leftover any more).
  seedEveryMode(ipt, net);
  await removal.afterSync([state([], { family: "IPv4" }), state([], { family: "IPv6" })]);
  assert.match(ipt.save("legacy", "IPv4"), /KUBE-SERVICES/);
});

Deno.test("createLeftoverRemoval() in iptables mode removes the nftables tables and kube-ipvs0, keeping its chains", async () => {
  const { ipt, net, run } = fakeNode();
  seedEveryMode(ipt, net);
  const removal = createLeftoverRemoval({
    mode: "iptables",
    families: ["IPv4"],
    runner: run,
    logger: silentLogger,
  });
  await removal.afterSync([state([], { family: "IPv4" })]);
  assert.deepEqual([...net.nftTables.keys()], ["inet filter"]);
  assert.ok(!net.links.has("kube-ipvs0"));
  assert.match(ipt.save("legacy", "IPv4"), /KUBE-SERVICES/);
});
