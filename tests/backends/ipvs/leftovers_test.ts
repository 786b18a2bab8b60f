import assert from "node:assert/strict";
import { computeCleanupPayload } from "../../../lib/netfilter/_cleanup.ts";
import { IPTABLES_JUMP_CHAINS, jumpInsertLine } from "../../../lib/netfilter/mod.ts";
import { KUBE_IPVS_DEVICE } from "../../../lib/backends/ipvs/cleanup.ts";
import {
  IPVS_MODE_KEPT_IPTABLES,
  mayHoldIpvsState,
  ownedByIpvsMode,
  parseIpvsConnections,
  parseIpvsOwnership,
  removeIptablesLeftoversForIpvsMode,
  removeIpvsLeftoversForIptablesMode,
} from "../../../lib/backends/ipvs/leftovers.ts";
import type { CommandRunner } from "../../../lib/exec/mod.ts";
import { createFakeIpAddr } from "../../support/fake_ip_addr.ts";
import { createFakeIpset } from "../../support/fake_ipset.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { createFakeIpvsadm } from "../../support/fake_ipvsadm.ts";

/** One conntrack flow as a tiny state-keeping fake holds it: its original tuple. */
interface Flow {
  proto: string;
  src: string;
  dst: string;
  sport: number;
  dport: number;
}

/**
 * A node after IPVS mode ran, with the fakes that keep state: iptables, ipset, ip, ipvsadm,
 * plus IPVS's connection list (`ipvsadm -Lnc`) and conntrack flows (`conntrack -R -` of `-D`
 * lines deletes the flows whose original tuple matches).
 */
function ipvsNode() {
  const ipt = createFakeIptables();
  const ipset = createFakeIpset();
  const ip = createFakeIpAddr(["192.168.0.2/24"]);
  const ipvs = createFakeIpvsadm();
  const connections: string[] = [];
  const flows: Flow[] = [];
  const run: CommandRunner = (input) => {
    if (/tables/.test(input.cmd)) return ipt.run(input);
    if (input.cmd === "ipset") {
      ipset.referenced.clear();
      const saved = ["IPv4", "IPv6"].map((f) => ipt.save("legacy", f as "IPv4")).join("");
      for (const m of saved.matchAll(/--match-set (\S+) /g)) ipset.referenced.add(m[1]!);
      return ipset.run(input);
    }
    if (input.cmd === "ip") return ip.run(input);
    if (input.cmd === "ipvsadm" && input.args.join(" ") === "-Lnc") {
      const head =
        "IPVS connection entries\npro expire state       source   virtual   destination\n";
      return Promise.resolve({ code: 0, stdout: head + connections.join("\n"), stderr: "" });
    }
    if (input.cmd === "ipvsadm") return ipvs.run(input);
    if (input.cmd === "conntrack" && input.args.join(" ") === "-R -") {
      for (const line of (input.stdin ?? "").split("\n").filter((l) => l !== "")) {
        const arg = (name: string) => {
          const w = line.split(" ");
          return w[w.indexOf(name) + 1];
        };
        const i = flows.findIndex((f) =>
          f.proto === arg("-p") && f.src === arg("--orig-src") && f.dst === arg("--orig-dst") &&
          String(f.sport) === arg("--orig-port-src") && String(f.dport) === arg("--orig-port-dst")
        );
        if (i >= 0) flows.splice(i, 1);
      }
      return Promise.resolve({ code: 0, stdout: "", stderr: "" });
    }
    return Promise.resolve({ code: 127, stdout: "", stderr: `${input.cmd}: not found` });
  };
  return { ipt, ipset, ip, ipvs, connections, flows, run };
}

type Node = ReturnType<typeof ipvsNode>;

/** What IPVS mode leaves for one ClusterIP service and one NodePort, plus another agent's. */
async function seedIpvsMode(node: Node) {
  await node.run({ cmd: "ip", args: ["link", "add", KUBE_IPVS_DEVICE, "type", "dummy"] });
  await node.run({
    cmd: "ip",
    args: ["-batch", "-"],
    stdin: `addr add 172.30.0.10/32 dev ${KUBE_IPVS_DEVICE}\n` +
      `addr add 172.30.0.53/32 dev ${KUBE_IPVS_DEVICE}\n`,
  });
  await node.run({
    cmd: "ipset",
    args: ["restore"],
    stdin: [
      "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536",
      "add KUBE-CLUSTER-IP 172.30.0.10,tcp:80",
      "add KUBE-CLUSTER-IP 172.30.0.53,udp:53",
      "create KUBE-NODE-PORT-TCP bitmap:port range 0-65535",
      "add KUBE-NODE-PORT-TCP 30080",
      "create my-allowlist hash:ip family inet hashsize 1024 maxelem 65536",
      "",
    ].join("\n"),
  });
  await node.run({
    cmd: "ipvsadm",
    args: ["-R"],
    stdin: [
      "-A -t 172.30.0.10:80 -s rr",
      "-a -t 172.30.0.10:80 -r 10.0.1.2:8080 -m -w 1",
      "-A -u 172.30.0.53:53 -s rr",
      "-a -u 172.30.0.53:53 -r 10.0.1.2:8080 -m -w 1",
      "-A -t 192.168.0.2:30080 -s rr",
      // Another agent's virtual server (a node-local load balancer): not IPVS mode's.
      "-A -t 192.168.0.2:6443 -s rr",
      "",
    ].join("\n"),
  });
  node.ipt.restore(
    "legacy",
    "IPv4",
    [
      "*nat",
      ":KUBE-SERVICES - [0:0]",
      ":KUBE-POSTROUTING - [0:0]",
      ":KUBE-NODE-PORT - [0:0]",
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT",
      "-A KUBE-NODE-PORT -p tcp -m set --match-set KUBE-NODE-PORT-TCP dst -j RETURN",
      "COMMIT",
      "*filter",
      ":KUBE-PROXY-FIREWALL - [0:0]",
      ":KUBE-IPVS-FILTER - [0:0]",
      '-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL',
      '-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
      "-A KUBE-IPVS-FILTER -m set --match-set KUBE-CLUSTER-IP dst,dst -j RETURN",
      "COMMIT",
      "",
    ].join("\n"),
  );
  // A UDP flow and a TCP connection IPVS carries, and a flow iptables mode already DNATed.
  node.connections.push(
    "UDP 04:58  UDP         10.0.3.2:40001     172.30.0.53:53     10.0.1.2:8080",
    "TCP 14:59  ESTABLISHED 10.0.3.2:53212     172.30.0.10:80     10.0.1.2:8080",
    "TCP 02:59  NONE        10.0.3.2:0         172.30.0.10:80     10.0.1.2:8080",
  );
  node.flows.push(
    { proto: "udp", src: "10.0.3.2", dst: "172.30.0.53", sport: 40001, dport: 53 },
    { proto: "tcp", src: "10.0.3.2", dst: "172.30.0.10", sport: 53212, dport: 80 },
    { proto: "tcp", src: "10.0.3.2", dst: "172.30.0.10", sport: 53999, dport: 80 },
  );
}

/** iptables mode's first sync, as far as the shared chains go: they are rewritten whole. */
function iptablesModeFirstSync(node: Node) {
  node.ipt.restore(
    "legacy",
    "IPv4",
    "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-POSTROUTING - [0:0]\n:KUBE-SVC-ABC - [0:0]\n" +
      "-A KUBE-SERVICES -d 172.30.0.10/32 -p tcp -m tcp --dport 80 -j KUBE-SVC-ABC\nCOMMIT\n" +
      "*filter\n:KUBE-PROXY-FIREWALL - [0:0]\n" +
      jumpInsertLine(IPTABLES_JUMP_CHAINS.find((j) => j.dstChain === "KUBE-PROXY-FIREWALL")!) +
      "\nCOMMIT\n",
  );
}

Deno.test("parseIpvsConnections() reads ipvsadm -Lnc, leaving out persistence templates and ended TCP connections", () => {
  const text = "IPVS connection entries\npro expire state source virtual destination\n" +
    "UDP 04:58  UDP         10.0.3.2:40001     172.30.0.53:53     10.0.1.2:8080\n" +
    "TCP 02:59  NONE        10.0.3.2:0         172.30.0.10:80     10.0.1.2:8080\n" +
    "TCP 01:58  TIME_WAIT   10.0.3.2:40002     172.30.0.10:80     10.0.1.2:8080\n" +
    "TCP 00:09  CLOSE       10.0.3.2:40003     172.30.0.10:80     10.0.2.2:8080\n" +
    "TCP 01:00  ESTABLISHED [fd00::3]:40000    [fd00:30::10]:80   [fd00::1]:8080\n";
  assert.deepEqual(parseIpvsConnections(text), [
    {
      protocol: "UDP",
      client: "10.0.3.2",
      clientPort: 40001,
      virtual: "172.30.0.53",
      virtualPort: 53,
    },
    {
      protocol: "TCP",
      client: "fd00::3",
      clientPort: 40000,
      virtual: "fd00:30::10",
      virtualPort: 80,
    },
  ]);
});

Deno.test("ownedByIpvsMode() takes kube-ipvs0's addresses and the members of IPVS mode's sets", () => {
  const addr = JSON.stringify([
    { ifname: "eth0", addr_info: [{ local: "192.168.0.2", prefixlen: 24 }] },
    { ifname: KUBE_IPVS_DEVICE, addr_info: [{ local: "172.30.0.10", prefixlen: 32 }] },
  ]);
  const sets = "create KUBE-EXTERNAL-IP hash:ip,port family inet\n" +
    "add KUBE-EXTERNAL-IP 192.168.0.2,tcp:8443\n" +
    "create KUBE-NODE-PORT-UDP bitmap:port range 0-65535\nadd KUBE-NODE-PORT-UDP 30053\n" +
    "create other hash:ip,port family inet\nadd other 192.168.0.2,tcp:6443\n";
  const owned = parseIpvsOwnership(addr, sets);
  const vs = (address: string, port: number, protocol: "TCP" | "UDP") =>
    ownedByIpvsMode({ address, port, protocol }, owned);
  assert.ok(vs("172.30.0.10", 9999, "TCP"), "any port of an address on kube-ipvs0");
  assert.ok(vs("192.168.0.2", 8443, "TCP"), "an external IP held by another interface");
  assert.ok(vs("192.168.0.2", 30053, "UDP"), "a NodePort on a node IP");
  assert.ok(!vs("192.168.0.2", 30053, "TCP"), "the NodePort set is per protocol");
  assert.ok(!vs("192.168.0.2", 6443, "TCP"), "another agent's set names nothing of ours");
});

Deno.test("iptables mode removes IPVS mode's state, its flows first, keeping its own chains and another agent's virtual server", async () => {
  const node = ipvsNode();
  await seedIpvsMode(node);
  iptablesModeFirstSync(node);
  await removeIpvsLeftoversForIptablesMode(node.run);

  assert.deepEqual(
    node.ipvs.calls.filter((c) => c.args[0] === "-R").map((c) => c.stdin).at(-1)?.split("\n")
      .filter((l) => l !== "").sort(),
    ["-D -t 172.30.0.10:80", "-D -t 192.168.0.2:30080", "-D -u 172.30.0.53:53"],
  );
  assert.deepEqual([...node.ipvs.services.keys()], ["TCP 192.168.0.2:6443"]);
  assert.ok(!node.ip.links.has(KUBE_IPVS_DEVICE));
  assert.deepEqual([...node.ipset.sets.keys()], ["my-allowlist"]);
  assert.deepEqual(
    node.flows.map((f) => f.sport),
    [53999],
    "the flows IPVS carried are deleted; the one iptables mode DNATed stays",
  );
  const saved = node.ipt.save("legacy", "IPv4");
  assert.doesNotMatch(saved, /KUBE-NODE-PORT\b|KUBE-IPVS-FILTER|kube-proxy firewall rules/);
  assert.match(saved, /-A KUBE-SERVICES .* -j KUBE-SVC-ABC/);
  assert.match(saved, /-A INPUT .*kubernetes load balancer firewall.* -j KUBE-PROXY-FIREWALL/);
  assert.match(saved, /-A PREROUTING .*kubernetes service portals.* -j KUBE-SERVICES/);

  // Again: nothing left to do, nothing fails.
  await removeIpvsLeftoversForIptablesMode(node.run);
  assert.deepEqual([...node.ipvs.services.keys()], ["TCP 192.168.0.2:6443"]);
});

Deno.test("removeIpvsLeftoversForIptablesMode() without IPVS in the kernel still removes kube-ipvs0 and the sets", async () => {
  const node = ipvsNode();
  await seedIpvsMode(node);
  iptablesModeFirstSync(node);
  const noIpvs: CommandRunner = (input) =>
    input.cmd === "ipvsadm"
      ? Promise.resolve({ code: 2, stdout: "", stderr: "Can't initialize ipvs" })
      : node.run(input);
  await removeIpvsLeftoversForIptablesMode(noIpvs);
  assert.ok(!node.ip.links.has(KUBE_IPVS_DEVICE));
  assert.deepEqual([...node.ipset.sets.keys()], ["my-allowlist"]);
});

Deno.test("mayHoldIpvsState() reads the tables unless neither kube-ipvs0 nor an IPVS mode set is there", () => {
  assert.equal(mayHoldIpvsState(["lo", "eth0"], ["my-allowlist"]), false);
  assert.equal(mayHoldIpvsState(["lo", KUBE_IPVS_DEVICE], []), true);
  assert.equal(mayHoldIpvsState(["lo"], ["KUBE-CLUSTER-IP"]), true);
  assert.equal(mayHoldIpvsState(null, []), true, "links not listed: read");
  assert.equal(mayHoldIpvsState(["lo"], null), true, "sets not listed: read");
});

Deno.test("iptables mode removes IPVS mode's rules left with its sets after kube-ipvs0 went", async () => {
  const node = ipvsNode();
  await seedIpvsMode(node);
  iptablesModeFirstSync(node);
  await node.run({ cmd: "ip", args: ["link", "del", KUBE_IPVS_DEVICE] });
  await removeIpvsLeftoversForIptablesMode(node.run);
  const saved = node.ipt.save("legacy", "IPv4");
  assert.doesNotMatch(saved, /KUBE-NODE-PORT\b|KUBE-IPVS-FILTER|kube-proxy firewall rules/);
  assert.match(saved, /-A KUBE-SERVICES .* -j KUBE-SVC-ABC/);
  assert.deepEqual([...node.ipset.sets.keys()], ["my-allowlist"]);
});

Deno.test("iptables mode on a node IPVS mode never ran on leaves every table as it is", async () => {
  const node = ipvsNode();
  iptablesModeFirstSync(node);
  const before = ["IPv4", "IPv6"].map((f) => node.ipt.save("legacy", f as "IPv4"));
  const failing: CommandRunner = (input) =>
    /-save$/.test(input.cmd)
      ? Promise.resolve({ code: 1, stdout: "", stderr: "no table read expected" })
      : node.run(input);
  await removeIpvsLeftoversForIptablesMode(failing);
  assert.deepEqual(["IPv4", "IPv6"].map((f) => node.ipt.save("legacy", f as "IPv4")), before);
});

Deno.test("ipvs mode removes iptables mode's chains and jumps it does not write, keeping its own and others'", async () => {
  const node = ipvsNode();
  node.ipt.restore(
    "legacy",
    "IPv4",
    [
      "*nat",
      ":KUBE-SERVICES - [0:0]",
      ":KUBE-NODEPORTS - [0:0]",
      ":KUBE-SVC-ABC - [0:0]",
      ":KUBE-SEP-DEF - [0:0]",
      ":KUBE-MARK-MASQ - [0:0]",
      ":KUBE-ROUTER-SVC - [0:0]",
      '-A PREROUTING -m comment --comment "kubernetes service portals" -j KUBE-SERVICES',
      "-A KUBE-SVC-ABC -j KUBE-SEP-DEF",
      "-A KUBE-SEP-DEF -p tcp -m tcp -j DNAT --to-destination 10.0.1.2:8080",
      // IPVS mode's restore already rewrote the shared chain.
      "-A KUBE-SERVICES -m set --match-set KUBE-CLUSTER-IP dst,dst -j ACCEPT",
      "COMMIT",
      "*filter",
      ":KUBE-SERVICES - [0:0]",
      ":KUBE-EXTERNAL-SERVICES - [0:0]",
      ":KUBE-NODEPORTS - [0:0]",
      ":KUBE-FORWARD - [0:0]",
      ":KUBE-PROXY-FIREWALL - [0:0]",
      ":KUBE-IPVS-FILTER - [0:0]",
      ":KUBE-FIREWALL - [0:0]",
      ...IPTABLES_JUMP_CHAINS.filter((j) => j.table === "filter").map(jumpInsertLine),
      '-A INPUT -m comment --comment "kube-proxy firewall rules" -j KUBE-PROXY-FIREWALL',
      '-A INPUT -m comment --comment "kubernetes ipvs access filter" -j KUBE-IPVS-FILTER',
      "-A KUBE-SERVICES -d 172.30.0.99/32 -p tcp -j REJECT",
      "COMMIT",
      "",
    ].join("\n"),
  );
  await removeIptablesLeftoversForIpvsMode(node.run);
  const saved = node.ipt.save("legacy", "IPv4");
  for (const gone of ["KUBE-NODEPORTS", "KUBE-SVC-ABC", "KUBE-SEP-DEF", "KUBE-EXTERNAL-SERVICES"]) {
    assert.doesNotMatch(saved, new RegExp(`:${gone} `));
  }
  assert.doesNotMatch(saved, /172\.30\.0\.99|kubernetes load balancer firewall/);
  for (const kept of ["KUBE-MARK-MASQ", "KUBE-ROUTER-SVC", "KUBE-IPVS-FILTER", "KUBE-FIREWALL"]) {
    assert.match(saved, new RegExp(`:${kept} `));
  }
  assert.match(saved, /-A INPUT .*kube-proxy firewall rules.* -j KUBE-PROXY-FIREWALL/);
  assert.match(saved, /-A INPUT -j KUBE-FIREWALL/);
  assert.match(saved, /-A PREROUTING .*kubernetes service portals.* -j KUBE-SERVICES/);
  assert.match(saved, /\*filter[^]*:KUBE-IPVS-FILTER/);
  assert.doesNotMatch(saved, /\*filter[^]*:KUBE-SERVICES[^]*\*nat/);
  assert.equal(
    computeCleanupPayload(node.ipt.save("legacy", "IPv4"), IPVS_MODE_KEPT_IPTABLES),
    null,
    "nothing more to remove",
  );
});
