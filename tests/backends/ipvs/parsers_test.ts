import assert from "node:assert/strict";
import { parseIpvsadmList, parseIpvsadmSave } from "../../../lib/backends/ipvs/ipvsadm_parser.ts";
import { parseIpsetList, parseIpsetSave } from "../../../lib/backends/ipvs/_ipset_parser.ts";
import { parseLinkAddresses } from "../../../lib/backends/ipvs/_link_addresses.ts";
import { parseIpAddrJson } from "../../../lib/net/mod.ts";

const SAVE = `-A -t 172.30.0.41:80 -s rr
-a -t 172.30.0.41:80 -r 10.0.1.1:8080 -m -w 1
-a -t 172.30.0.41:80 -r 10.0.2.1:8080 -m -w 0
-A -u 172.30.0.10:53 -s rr -p 10800
-A --sctp-service 192.168.0.2:30090 -s mh -b mh-port
-A -t [fd00:30::1]:443 -s rr
-a -t [fd00:30::1]:443 -r [fd00:10::5]:8443 -m -w 1
-A -f 100 -s rr
-a -f 100 -r 10.0.9.9:0 -g -w 1
`;

Deno.test("parseIpvsadmSave() reads services, persistence, scheduler flags, IPv6 and skips fwmark services", () => {
  const { table, fwmarkServices } = parseIpvsadmSave(SAVE);
  assert.equal(fwmarkServices, 1);
  assert.deepEqual([...table.keys()], [
    "172.30.0.41:80/TCP",
    "172.30.0.10:53/UDP",
    "192.168.0.2:30090/SCTP",
    "[fd00:30::1]:443/TCP",
  ]);
  const web = table.get("172.30.0.41:80/TCP")!;
  assert.deepEqual(web.vs, {
    address: "172.30.0.41",
    port: 80,
    protocol: "TCP",
    scheduler: "rr",
    persistentTimeout: 0,
    schedFlags: [],
  });
  assert.equal(web.realServers.get("10.0.2.1:8080")!.weight, 0);
  assert.equal(web.realServers.get("10.0.2.1:8080")!.activeConns, undefined);
  assert.equal(table.get("172.30.0.10:53/UDP")!.vs.persistentTimeout, 10800);
  assert.deepEqual(table.get("192.168.0.2:30090/SCTP")!.vs.schedFlags, ["mh-port"]);
  assert.ok(table.get("[fd00:30::1]:443/TCP")!.realServers.has("[fd00:10::5]:8443"));
  assert.throws(() => parseIpvsadmSave("-A -t nonsense -s rr\n"), /Invalid "ipvsadm -Sn" line/);
});

const LIST = `IP Virtual Server version 1.2.1 (size=4096)
Prot LocalAddress:Port Scheduler Flags
  -> RemoteAddress:Port           Forward Weight ActiveConn InActConn
TCP  172.30.0.41:80 rr persistent 10800
  -> 10.0.1.1:8080                Masq    1      3          12
  -> 10.0.2.1:8080                Masq    0      0          0
UDP  172.30.0.10:53 rr
SCTP 192.168.0.2:30090 mh (mh-port)
TCP  [fd00:30::1]:443 rr
  -> [fd00:10::5]:8443            Masq    1      0          1
FWM  100 rr
  -> 10.0.9.9:0                   Route   1      0          0
`;

Deno.test("parseIpvsadmList() reads connection counts, persistence and flags", () => {
  const { table, fwmarkServices } = parseIpvsadmList(LIST);
  assert.equal(fwmarkServices, 1);
  assert.equal(table.size, 4);
  const web = table.get("172.30.0.41:80/TCP")!;
  assert.equal(web.vs.persistentTimeout, 10800);
  assert.deepEqual(web.realServers.get("10.0.1.1:8080"), {
    address: "10.0.1.1",
    port: 8080,
    weight: 1,
    activeConns: 3,
    inactiveConns: 12,
  });
  assert.deepEqual(table.get("192.168.0.2:30090/SCTP")!.vs.schedFlags, ["mh-port"]);
  assert.equal(
    table.get("[fd00:30::1]:443/TCP")!.realServers.get("[fd00:10::5]:8443")!.inactiveConns,
    1,
  );
});

Deno.test("parseIpvsadmList() keys real servers canonically and refuses bad real-server lines", () => {
  const head = "IP Virtual Server version 1.2.1 (size=4096)\nTCP  172.30.0.41:80 rr\n";
  // A port with a leading zero is read as its number and keyed in the canonical spelling.
  const { table } = parseIpvsadmList(`${head}  -> 10.0.1.1:08080  Masq  1  0  2\n`);
  assert.deepEqual([...table.get("172.30.0.41:80/TCP")!.realServers.keys()], ["10.0.1.1:8080"]);
  for (
    const bad of [
      "  -> 10.0.1.1:8080  Masq  1  0",
      "  -> 10.0.1.1:8080  Masq  1  x  0",
      "  -> 10.0.1.1:99999  Masq  1  0  0",
      "  -> 10.0.1.256:8080  Masq  1  0  0",
      "  -> 10.0.1.1:  Masq  1  0  0",
      "  -> fd00::1:80  Masq  1  0  0",
    ]
  ) {
    assert.throws(() => parseIpvsadmList(`${head}${bad}\n`), SyntaxError, bad);
  }
});

Deno.test("parseIpsetSave() reads members of our types in their canonical spelling, other sets as they are", () => {
  const sets = parseIpsetSave(
    `create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x5c3a7c4f
add KUBE-CLUSTER-IP 172.30.0.41,tcp:80
add KUBE-CLUSTER-IP 172.30.0.10,udp:53
create KUBE-6-LOAD-BALANCER-SOURCE-CID hash:ip,port,net family inet6 hashsize 1024 maxelem 65536
add KUBE-6-LOAD-BALANCER-SOURCE-CID fd00:50:0:0::1,tcp:80,fd00:20::/64
create KUBE-NODE-PORT-TCP bitmap:port range 0-65535
add KUBE-NODE-PORT-TCP 30080
create other hash:net family inet hashsize 1024 maxelem 65536
add other 10.9.0.0/16
`,
  );
  assert.deepEqual([...sets.get("KUBE-CLUSTER-IP")!.members].sort(), [
    "172.30.0.10,udp:53",
    "172.30.0.41,tcp:80",
  ]);
  assert.deepEqual([...sets.get("KUBE-6-LOAD-BALANCER-SOURCE-CID")!.members], [
    "fd00:50::1,tcp:80,fd00:20::/64",
  ]);
  assert.deepEqual([...sets.get("KUBE-NODE-PORT-TCP")!.members], ["30080"]);
  assert.equal(sets.get("other")!.type, "hash:net");
});

Deno.test("parseIpsetList() reads the Members: block of each set", () => {
  const sets = parseIpsetList(`Name: KUBE-IPVS-IPS
Type: hash:ip
Revision: 6
Header: family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x1
Size in memory: 312
References: 1
Number of entries: 2
Members:
172.30.0.41
172.30.0.10

Name: KUBE-LOOP-BACK
Type: hash:ip,port,ip
Revision: 6
Header: family inet hashsize 1024 maxelem 65536
Size in memory: 200
References: 1
Number of entries: 0
Members:
`);
  assert.deepEqual([...sets.get("KUBE-IPVS-IPS")!.members].sort(), ["172.30.0.10", "172.30.0.41"]);
  assert.equal(sets.get("KUBE-LOOP-BACK")!.members.size, 0);
});

Deno.test("kube-ipvs0 addresses come from `ip -j addr show dev kube-ipvs0` through lib/net", () => {
  const json = JSON.stringify([{
    ifname: "kube-ipvs0",
    addr_info: [
      { family: "inet", local: "172.30.0.41", prefixlen: 32 },
      { family: "inet6", local: "fd00:30::1", prefixlen: 128 },
    ],
  }]);
  assert.deepEqual(parseIpAddrJson(json, "IPv4"), ["172.30.0.41"]);
  assert.deepEqual(parseIpAddrJson(json, "IPv6"), ["fd00:30::1"]);
});

Deno.test("parseLinkAddresses() tells kube-ipvs0's addresses from the node's, without link-local ones", () => {
  const json = JSON.stringify([
    { ifname: "lo", addr_info: [{ local: "127.0.0.1" }, { local: "::1" }] },
    {
      ifname: "eth0",
      addr_info: [{ local: "192.168.0.2" }, { local: "fe80::1" }, { local: "fd00:20::2" }],
    },
    { ifname: "kube-ipvs0", addr_info: [{ local: "172.30.0.41" }, { local: "fe80::2" }] },
  ]);
  assert.deepEqual(parseLinkAddresses(json, "IPv4"), {
    deviceExists: true,
    bound: ["172.30.0.41"],
    node: ["127.0.0.1", "192.168.0.2"],
  });
  assert.deepEqual(parseLinkAddresses(json, "IPv6"), {
    deviceExists: true,
    bound: [],
    node: ["::1", "fd00:20::2"],
  });
  assert.equal(parseLinkAddresses("[]", "IPv4").deviceExists, false);
});
