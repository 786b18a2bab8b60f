import assert from "node:assert/strict";
import {
  createIptablesProxier,
  ipCommandAddressLister,
  parseIpAddrJson,
} from "../../../lib/backends/iptables/mod.ts";
import type { CommandRunner } from "../../../lib/exec/mod.ts";
import { createMemoryLogger } from "../../../lib/log/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, sps, state, svc } from "./state_fixtures.ts";

/** Trimmed `ip -json addr show` output of a node with a second address on eth0. */
const IP_ADDR_JSON = JSON.stringify([
  { ifname: "lo", addr_info: [{ family: "inet", local: "127.0.0.1" }] },
  {
    ifname: "eth0",
    addr_info: [
      { family: "inet", local: "192.168.0.2" },
      { family: "inet", local: "198.51.100.2" },
      { family: "inet6", local: "fd00:192:0::2" },
    ],
  },
  { ifname: "veth0" },
]);

Deno.test("parseIpAddrJson() returns the family's addresses, canonical and once each", () => {
  assert.deepEqual(parseIpAddrJson(IP_ADDR_JSON, "IPv4"), [
    "127.0.0.1",
    "192.168.0.2",
    "198.51.100.2",
  ]);
  assert.deepEqual(parseIpAddrJson(IP_ADDR_JSON, "IPv6"), ["fd00:192::2"]);
  assert.throws(() => parseIpAddrJson("{}", "IPv4"), /expected a JSON array/);
});

Deno.test("ipCommandAddressLister() runs ip -json addr show and fails on a non-zero exit", async () => {
  const ok: CommandRunner = ({ cmd, args }) =>
    Promise.resolve(
      cmd === "ip" && args.join(" ") === "-json -4 addr show"
        ? { code: 0, stdout: IP_ADDR_JSON, stderr: "" }
        : { code: 1, stdout: "", stderr: "unexpected" },
    );
  assert.deepEqual(await ipCommandAddressLister(ok)("IPv4"), [
    "127.0.0.1",
    "192.168.0.2",
    "198.51.100.2",
  ]);
  await assert.rejects(() => ipCommandAddressLister(ok)("IPv6"), /exited 1: unexpected/);
});

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
