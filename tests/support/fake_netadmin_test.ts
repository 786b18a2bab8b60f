import assert from "node:assert/strict";
import { createFakeNetadmin } from "./fake_netadmin.ts";

Deno.test("fake netadmin keeps nft tables, ipsets and links, and refuses what the real tools refuse", async () => {
  const fake = createFakeNetadmin();
  const run = (cmd: string, line: string) => fake.run({ cmd, args: line.split(" ") });
  assert.equal((await run("nft", "add table ip kube-proxy")).code, 0);
  assert.equal((await run("nft", "list tables")).stdout, "table ip kube-proxy\n");
  assert.equal((await run("nft", "delete table ip kube-proxy")).code, 0);
  assert.equal((await run("nft", "delete table ip kube-proxy")).code, 1, "already gone");

  assert.equal((await run("ipset", "create KUBE-CLUSTER-IP hash:ip,port")).code, 0);
  assert.equal((await run("ipset", "list -n")).stdout, "KUBE-CLUSTER-IP\n");
  fake.ipsets.get("KUBE-CLUSTER-IP")!.references = 1;
  assert.match((await run("ipset", "destroy KUBE-CLUSTER-IP")).stderr, /in use/);
  fake.ipsets.get("KUBE-CLUSTER-IP")!.references = 0;
  assert.equal((await run("ipset", "destroy KUBE-CLUSTER-IP")).code, 0);
  assert.equal((await run("ipset", "destroy KUBE-CLUSTER-IP")).code, 1, "already gone");

  assert.equal((await run("ip", "link add kube-ipvs0 type dummy")).code, 0);
  const links = JSON.parse((await run("ip", "-j link show")).stdout) as { ifname: string }[];
  assert.deepEqual(links.map((l) => l.ifname), ["lo", "kube-ipvs0"]);
  assert.equal((await run("ip", "link del kube-ipvs0")).code, 0);
  assert.equal((await run("ip", "link del kube-ipvs0")).code, 1, "already gone");

  assert.equal((await run("ipvsadm", "-A -t 172.30.0.10:80 -s rr")).code, 0);
  assert.match((await run("ipvsadm", "-L -n")).stdout, /TCP {2}172\.30\.0\.10:80 rr/);
  assert.equal((await run("ipvsadm", "--clear")).code, 0);
  assert.deepEqual([...fake.virtualServers], []);
});

Deno.test("fake netadmin without IPVS fails every ipvsadm call; missing binaries exit 127", async () => {
  const noIpvs = createFakeNetadmin({ ipvs: false });
  assert.equal((await noIpvs.run({ cmd: "ipvsadm", args: ["-L", "-n"] })).code, 2);
  const noNft = createFakeNetadmin({ missing: ["nft"] });
  assert.equal((await noNft.run({ cmd: "nft", args: ["list", "tables"] })).code, 127);
});
