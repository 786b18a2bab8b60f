import assert from "node:assert/strict";
import { CommandFailure } from "../../lib/app/command_failure.ts";
import { cleanupCommand } from "../../lib/app/commands.ts";
import { KUBE_IPVS_DEVICE } from "../../lib/backends/ipvs/cleanup.ts";
import { silentLogger } from "../../lib/log/mod.ts";
import { fakeNode, seedEveryMode as seed } from "../support/fake_node.ts";

Deno.test("cleanupCommand() removes the iptables, nftables and IPVS state of every mode, iptables first", async () => {
  const { ipt, net, run } = fakeNode();
  seed(ipt, net);
  await cleanupCommand(run, silentLogger);
  assert.doesNotMatch(ipt.save("legacy", "IPv4"), /KUBE-/);
  assert.deepEqual([...net.nftTables.keys()], ["inet filter"]);
  assert.deepEqual([...net.ipsets.keys()], ["my-allowlist"]);
  assert.ok(!net.links.has(KUBE_IPVS_DEVICE));
  await assert.doesNotReject(() => cleanupCommand(run, silentLogger), "nothing left is success");
});

Deno.test("cleanupCommand() cleans the other modes when one fails, then fails with exit code 1", async () => {
  const { ipt, net, run } = fakeNode();
  seed(ipt, net);
  net.nftOwnedTables.add("ip6 kube-proxy");
  await assert.rejects(
    () => cleanupCommand(run, silentLogger),
    (err) => err instanceof CommandFailure && err.code === 1 && /"nftables"/.test(err.message),
  );
  assert.doesNotMatch(ipt.save("legacy", "IPv4"), /KUBE-/);
  assert.deepEqual([...net.ipsets.keys()], ["my-allowlist"]);
  assert.ok(!net.links.has(KUBE_IPVS_DEVICE));
});
