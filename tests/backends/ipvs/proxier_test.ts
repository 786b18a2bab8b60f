import assert from "node:assert/strict";
import { createIpvsProxier, type IpvsProxierOptions } from "../../../lib/backends/ipvs/proxier.ts";
import type { CommandRunner } from "../../../lib/exec/mod.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import { createFakeIpAddr } from "../../support/fake_ip_addr.ts";
import { createFakeIpset } from "../../support/fake_ipset.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { createFakeIpvsadm } from "../../support/fake_ipvsadm.ts";
import { FakeClock } from "../../support/fake_clock.ts";
import { createMemoryLogger } from "../../../lib/log/mod.ts";
import { ep, port, state, svc } from "./fixtures.ts";

/** A node of stateful fakes behind one runner. */
function fakeNode() {
  const ip = createFakeIpAddr();
  const ipset = createFakeIpset();
  const ipvs = createFakeIpvsadm();
  const ipt = createFakeIptables();
  const run: CommandRunner = (input) => {
    if (input.cmd === "ip") return ip.run(input);
    if (input.cmd === "ipset") return ipset.run(input);
    if (input.cmd === "ipvsadm") return ipvs.run(input);
    return ipt.run(input);
  };
  return { ip, ipset, ipvs, ipt, run };
}

type Node = ReturnType<typeof fakeNode>;

function proxier(n: Node, o: Partial<IpvsProxierOptions> = {}) {
  let restoreFailures = 0;
  let cleanupFailures = 0;
  const p = createIpvsProxier({
    family: "IPv4",
    runner: n.run,
    metrics: {
      applyFailed: () => restoreFailures++,
      cleanupFailed: () => cleanupFailures++,
      synced: () => {},
    },
    ...o,
  });
  return { p, restoreFailures: () => restoreFailures, cleanupFailures: () => cleanupFailures };
}

async function snapshot(n: Node) {
  const vs = (await n.ipvs.run({ cmd: "ipvsadm", args: ["-Sn"] })).stdout.split("\n").sort();
  const sets = (await n.ipset.run({ cmd: "ipset", args: ["save"] })).stdout.split("\n").sort();
  return { vs, sets, addrs: n.ip.addresses("kube-ipvs0").sort(), ipt: n.ipt.save("nft", "IPv4") };
}

const web = (): ProxyState =>
  state([
    port(svc({ nodePort: 30080, externalIPs: ["198.51.100.7"] }), [ep("10.0.1.1"), ep("10.0.2.1")]),
    port(svc({ name: "db", clusterIP: "172.30.0.42", port: 5432 }), [ep("10.0.3.1", 5432)]),
  ]);

Deno.test("createIpvsProxier() sync creates kube-ipvs0, binds service addresses, programs sets, virtual servers and rules", async () => {
  const n = fakeNode();
  const { p } = proxier(n);
  await p.sync(web());
  assert.equal(n.ip.links.get("kube-ipvs0")?.type, "dummy");
  assert.deepEqual(n.ip.addresses("kube-ipvs0").sort(), [
    "172.30.0.41",
    "172.30.0.42",
    "198.51.100.7",
  ]);
  assert.ok(n.ipvs.services.has("TCP 192.168.0.2:30080"));
  assert.equal(n.ipvs.services.get("TCP 172.30.0.41:80")!.reals.size, 2);
  assert.deepEqual(n.ipset.members("KUBE-IPVS-IPS"), [
    "172.30.0.41",
    "172.30.0.42",
    "198.51.100.7",
  ]);
  assert.ok(n.ipt.table("nft", "IPv4", "filter").has("KUBE-IPVS-FILTER"));

  // Nothing changed: a partial sync runs no command at all; a full one reads, writes nothing.
  const all = () => [...n.ipvs.calls, ...n.ip.calls, ...n.ipset.calls, ...n.ipt.calls];
  const before = all().length;
  assert.equal((await p.sync(web())).full, false);
  assert.equal(all().length, before);
  const [ipvsBefore, ipBefore] = [n.ipvs.calls.length, n.ip.calls.length];
  assert.equal((await p.sync({ ...web(), forceFullSync: true })).full, true);
  const later = [...n.ipvs.calls.slice(ipvsBefore), ...n.ip.calls.slice(ipBefore)];
  assert.deepEqual(later.map((c) => c.args.join(" ")), ["-Ln", "-j addr show"]);
});

Deno.test("createIpvsProxier() sync removes what a deleted service had: address, virtual server, set member", async () => {
  const n = fakeNode();
  const { p } = proxier(n);
  await p.sync(web());
  await p.sync(
    state([
      port(svc({ name: "db", clusterIP: "172.30.0.42", port: 5432 }), [ep("10.0.3.1", 5432)]),
    ]),
  );
  assert.deepEqual(n.ip.addresses("kube-ipvs0"), ["172.30.0.42"]);
  assert.deepEqual([...n.ipvs.services.keys()], ["TCP 172.30.0.42:5432"]);
  assert.deepEqual(n.ipset.members("KUBE-CLUSTER-IP"), ["172.30.0.42,tcp:5432"]);
  assert.deepEqual(n.ipset.members("KUBE-NODE-PORT-TCP"), []);
});

Deno.test("createIpvsProxier() counts and logs a failed apply, loses nothing, and the next sync converges", async () => {
  const n = fakeNode();
  const { p, restoreFailures } = proxier(n);
  await p.sync(state([port(svc(), [ep("10.0.1.1")])]));
  const good = await snapshot(n);

  n.ipvs.failRestoreContaining("172.30.0.42");
  await assert.rejects(p.sync(web()), /ipvsadm -R/);
  assert.equal(p.failures["ipvsadm"], 1);
  assert.deepEqual((await snapshot(n)).vs, good.vs);

  n.ipvs.failRestoreContaining(null);
  n.ipt.failNextRestore("iptables-restore: line 3 failed");
  await assert.rejects(p.sync(web()), /iptables/);
  assert.equal(restoreFailures(), 1);

  await p.sync(web());
  const fresh = fakeNode();
  await proxier(fresh).p.sync(web());
  const [a, b] = [await snapshot(n), await snapshot(fresh)];
  assert.deepEqual(a.vs, b.vs);
  assert.deepEqual(a.sets, b.sets);
  assert.deepEqual(a.addrs, b.addrs);
  assert.equal(a.ipt, b.ipt);
});

Deno.test("createIpvsProxier() drains a removed TCP real server and deletes it on the check after its connections end", async () => {
  const n = fakeNode();
  const clock = new FakeClock();
  const { p } = proxier(n, { clock });
  const ac = new AbortController();
  p.start(ac.signal);
  await p.sync(state([port(svc(), [ep("10.0.1.1"), ep("10.0.2.1")])]));
  n.ipvs.setConnections("TCP 172.30.0.41:80", "10.0.2.1:80", 1, 0);
  await p.sync(state([port(svc(), [ep("10.0.1.1")])]));
  const real = () => n.ipvs.services.get("TCP 172.30.0.41:80")!.reals.get("10.0.2.1:80");
  assert.equal(real()?.weight, 0);

  await clock.advance(60_000);
  assert.equal(real()?.weight, 0, "kept while it has a connection");
  n.ipvs.setConnections("TCP 172.30.0.41:80", "10.0.2.1:80", 0, 0);
  await clock.advance(59_000);
  assert.ok(real() !== undefined, "checked only once a minute");
  await clock.advance(1_000);
  assert.equal(real(), undefined);
  assert.equal(p.draining.size, 0);

  ac.abort();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("createIpvsProxier() logs and counts a failed drain check and deletes on the next", async () => {
  const n = fakeNode();
  const clock = new FakeClock();
  const logger = createMemoryLogger();
  const { p, cleanupFailures } = proxier(n, { clock, logger });
  const ac = new AbortController();
  p.start(ac.signal);
  await p.sync(state([port(svc(), [ep("10.0.1.1"), ep("10.0.2.1")])]));
  await p.sync(state([port(svc(), [ep("10.0.1.1")])]));
  const real = () => n.ipvs.services.get("TCP 172.30.0.41:80")!.reals.get("10.0.2.1:80");
  n.ipvs.failRestoreContaining("10.0.2.1");
  await clock.advance(60_000);
  assert.equal(cleanupFailures(), 1);
  assert.ok(logger.lines.some((l) => /IPVS graceful termination check failed/.test(l)));
  assert.ok(real() !== undefined, "kept after the failed delete");
  n.ipvs.failRestoreContaining(null);
  await clock.advance(60_000);
  assert.equal(real(), undefined);
  assert.equal(cleanupFailures(), 1);
  ac.abort();
});

Deno.test("createIpvsProxier() never hands an untrusted value to any command", async () => {
  const n = fakeNode();
  const { p } = proxier(n);
  await p.sync(state([
    port(svc({ externalIPs: ["198.51.100.7\n-A INPUT -j ACCEPT"] })),
    port(svc({ name: "ok", clusterIP: "172.30.0.43" }), [ep("10.0.1.1")]),
  ]));
  const sent = [...n.ip.calls, ...n.ipset.calls, ...n.ipvs.calls, ...n.ipt.calls]
    .map((c) => `${c.args.join(" ")} ${c.stdin ?? ""}`).join("\n");
  assert.ok(!sent.includes("172.30.0.41"));
  assert.ok(!sent.includes("-A INPUT -j ACCEPT"));
  assert.ok(sent.includes("172.30.0.43"));
});

Deno.test("createIpvsProxier() treats a line ipvsadm -R refused as a failure even when the last line succeeded", async () => {
  const n = fakeNode();
  let raced = false;
  const run: CommandRunner = async (input) => {
    if (input.cmd === "ipvsadm" && input.args[0] === "-R" && !raced) {
      raced = true; // another actor adds the same service between our read and our write
      await n.ipvs.run({ cmd: "ipvsadm", args: ["-A", "-t", "172.30.0.42:5432", "-s", "wlc"] });
    }
    return n.run(input);
  };
  const p = createIpvsProxier({ family: "IPv4", runner: run });
  const err = await p.sync(web()).catch((e) => e);
  assert.match(String(err), /Service already exists/);
  assert.equal(p.failures["ipvsadm"], 1);
  assert.ok(n.ipvs.services.has("TCP 172.30.0.41:80"), "later lines were still applied");

  await p.sync(web());
  const fresh = fakeNode();
  await proxier(fresh).p.sync(web());
  assert.deepEqual((await snapshot(n)).vs, (await snapshot(fresh)).vs);
});

Deno.test("createIpvsProxier() of each family shares kube-ipvs0, even when it holds no address of the family", async () => {
  const n = fakeNode();
  await proxier(n).p.sync(web());
  const v6 = proxier(n, { family: "IPv6" }).p;
  // `ip -6 addr show` leaves out a kube-ipvs0 with only IPv4 addresses: it must still be found.
  await v6.sync(state([], { family: "IPv6" }));
  await v6.sync(state([], { family: "IPv6" }));
  assert.equal(n.ip.links.get("kube-ipvs0")?.type, "dummy");
  assert.ok(n.ip.addresses("kube-ipvs0").includes("172.30.0.41"));
});
