import assert from "node:assert/strict";
import { createIptablesProxier } from "../../../lib/backends/iptables/proxier.ts";
import { createMemoryLogger } from "../../../lib/log/mod.ts";
import { parseIpAddrJson } from "../../../lib/net/mod.ts";
import { IP_ADDR_JSON } from "../../net/fixtures.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

/** The KUBE-NODEPORTS jumps a proxier programs with nodePortAddresses and a lister. */
async function nodePortJumps(lister: () => Promise<readonly string[]>) {
  const fake = createFakeIptables();
  const logger = createMemoryLogger();
  const proxier = createIptablesProxier({
    family: "IPv4",
    flavour: "legacy",
    runner: fake.run,
    logger,
    nodePortAddresses: ["198.51.100.0/24"],
    listLocalAddresses: lister,
  });
  await proxier.sync(state([sps(svc({ nodePort: 30080 }), [ep("10.180.0.1")])]));
  const rules = fake.table("legacy", "IPv4", "nat").get("KUBE-SERVICES")?.rules ?? [];
  return { jumps: rules.filter((r) => r.endsWith("-j KUBE-NODEPORTS")), logger };
}

Deno.test("IptablesProxier binds NodePorts to interface addresses inside nodePortAddresses", async () => {
  const { jumps } = await nodePortJumps(() =>
    Promise.resolve(parseIpAddrJson(IP_ADDR_JSON, "IPv4"))
  );
  assert.equal(jumps.length, 1, JSON.stringify(jumps));
  assert.match(jumps[0]!, / -d 198\.51\.100\.2 -j KUBE-NODEPORTS$/);
});

Deno.test("IptablesProxier logs a failed address listing and falls back to the node IPs", async () => {
  const { jumps, logger } = await nodePortJumps(() => Promise.reject(new Error("no ip binary")));
  assert.deepEqual(jumps, []);
  assert.ok(logger.lines.some((l) => l.includes("Failed to list the node's addresses")));
});
