import assert from "node:assert/strict";
import {
  cleanupIpvs,
  KUBE_IPVS_DEVICE,
  parseIpsetNames,
  parseLinkNames,
} from "../../../lib/backends/ipvs/cleanup.ts";
import { CommandError } from "../../../lib/exec/mod.ts";
import { createLogger } from "../../../lib/log/mod.ts";
import { createFakeNetadmin, type FakeNetadminOptions } from "../../support/fake_netadmin.ts";

/** A node after IPVS mode ran: virtual servers, kube-ipvs0, our sets, plus foreign state. */
function seededNode(options: FakeNetadminOptions = {}) {
  const fake = createFakeNetadmin(options);
  if (options.ipvs !== false) {
    fake.virtualServers.add("-t 172.30.0.10:80");
    fake.virtualServers.add("-u 172.30.0.10:53");
  }
  fake.links.set(KUBE_IPVS_DEVICE, "dummy");
  fake.links.set("eth0", "veth");
  for (const name of ["KUBE-CLUSTER-IP", "KUBE-6-CLUSTER-IP", "KUBE-NODE-PORT-TCP"]) {
    fake.ipsets.set(name, { type: "hash:ip,port", references: 0 });
  }
  fake.ipsets.set("my-allowlist", { type: "hash:net", references: 1 });
  fake.ipsets.set("KUBE-MY-OWN", { type: "hash:ip", references: 0 });
  return fake;
}

function assertCleaned(fake: ReturnType<typeof createFakeNetadmin>) {
  assert.deepEqual([...fake.virtualServers], []);
  assert.deepEqual([...fake.links.keys()].sort(), ["eth0", "lo"]);
  assert.deepEqual(
    [...fake.ipsets.keys()].sort(),
    ["KUBE-MY-OWN", "my-allowlist"],
    "only the sets IPVS mode creates are destroyed",
  );
}

Deno.test("parseLinkNames() reads ifname from `ip -j link show`", () => {
  const json = '[{"ifindex":1,"ifname":"lo","flags":["LOOPBACK"]},' +
    '{"ifindex":5,"link_index":4,"ifname":"veth0","link_netnsid":0},{"ifindex":7}]';
  assert.deepEqual(parseLinkNames(json), ["lo", "veth0"]);
  assert.deepEqual(parseLinkNames(""), []);
  assert.throws(() => parseLinkNames('{"ifname":"lo"}'), /expected a JSON array/);
});

Deno.test("parseIpsetNames() reads one name per line", () => {
  assert.deepEqual(parseIpsetNames("KUBE-CLUSTER-IP\nmy-allowlist\n\n"), [
    "KUBE-CLUSTER-IP",
    "my-allowlist",
  ]);
});

Deno.test("cleanupIpvs() clears virtual servers, deletes kube-ipvs0 and destroys only our ipsets", async () => {
  const fake = seededNode();
  await cleanupIpvs(fake.run);
  assertCleaned(fake);
  await cleanupIpvs(fake.run);
  assertCleaned(fake);
});

Deno.test("cleanupIpvs() without IPVS in the kernel logs at -v=2 and still cleans the device and ipsets", async () => {
  const fake = seededNode({ ipvs: false });
  const lines: string[] = [];
  await cleanupIpvs(fake.run, createLogger({ verbosity: 2, write: (l) => lines.push(l) }));
  assertCleaned(fake);
  assert.ok(lines.some((l) => l.includes("IPVS not available")), lines.join("\n"));
  assert.ok(!lines.some((l) => l.startsWith("E")), lines.join("\n"));
});

Deno.test("cleanupIpvs() on a node without ipvsadm, ipset or any state succeeds", async () => {
  await assert.doesNotReject(() =>
    cleanupIpvs(createFakeNetadmin({ missing: ["ipvsadm", "ipset"] }).run)
  );
  await assert.doesNotReject(() => cleanupIpvs(createFakeNetadmin({ ipvs: false }).run));
});

Deno.test("cleanupIpvs() destroys the other sets when one is still referenced, then throws", async () => {
  const fake = seededNode();
  fake.ipsets.get("KUBE-CLUSTER-IP")!.references = 1;
  await assert.rejects(
    () => cleanupIpvs(fake.run),
    (err) =>
      err instanceof CommandError && err.cmd === "ipset" &&
      err.args.join(" ") === "destroy KUBE-CLUSTER-IP",
  );
  assert.deepEqual([...fake.ipsets.keys()].sort(), [
    "KUBE-CLUSTER-IP",
    "KUBE-MY-OWN",
    "my-allowlist",
  ]);
  assert.ok(!fake.links.has(KUBE_IPVS_DEVICE));
  assert.deepEqual([...fake.virtualServers], []);
});

Deno.test("cleanupIpvs() still destroys the ipsets when the interface listing fails", async () => {
  const fake = seededNode({ missing: ["ip"] });
  await assert.rejects(
    () => cleanupIpvs(fake.run),
    (err) => err instanceof CommandError && err.cmd === "ip",
  );
  assert.ok(!fake.ipsets.has("KUBE-CLUSTER-IP"));
});
