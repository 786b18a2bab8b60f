import assert from "node:assert/strict";
import { createIpvsProxier, type IpvsProxier } from "../../../lib/backends/ipvs/proxier.ts";
import type { CommandInput, CommandRunner } from "../../../lib/exec/mod.ts";
import type { IPFamily, ProxyState, ServicePortState } from "../../../lib/proxy/mod.ts";
import { createFakeIpAddr } from "../../support/fake_ip_addr.ts";
import { createFakeIpset } from "../../support/fake_ipset.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { createFakeIpvsadm } from "../../support/fake_ipvsadm.ts";
import { generateState, prng } from "../../support/trace_states.ts";
import { ep, key, port, state, svc } from "./fixtures.ts";

/** A node of stateful fakes behind one runner that keeps every command. */
function fakeNode() {
  const ip = createFakeIpAddr();
  const ipset = createFakeIpset();
  const ipvs = createFakeIpvsadm();
  const ipt = createFakeIptables();
  const seen: CommandInput[] = [];
  const run: CommandRunner = (input) => {
    seen.push(input);
    if (input.cmd === "ip") return ip.run(input);
    if (input.cmd === "ipset") return ipset.run(input);
    if (input.cmd === "ipvsadm") return ipvs.run(input);
    return ipt.run(input);
  };
  return { ip, ipset, ipvs, ipt, run, seen };
}
type Node = ReturnType<typeof fakeNode>;

function proxier(n: Node, family: IPFamily = "IPv4"): IpvsProxier {
  return createIpvsProxier({ family, runner: n.run, clusterCIDRs: ["10.0.0.0/8"] });
}

/** What a node holds: virtual/real servers (weight-0 ones apart), sets, addresses, rules. */
async function held(n: Node, family: IPFamily = "IPv4") {
  const save = (await n.ipvs.run({ cmd: "ipvsadm", args: ["-Sn"] })).stdout.split("\n");
  const sets = (await n.ipset.run({ cmd: "ipset", args: ["save"] })).stdout.split("\n").sort();
  return {
    vs: save.filter((l) => l !== "" && !l.endsWith(" -w 0")).sort(),
    draining: save.filter((l) => l.endsWith(" -w 0")).sort(),
    sets,
    addrs: n.ip.addresses("kube-ipvs0").sort(),
    ipt: n.ipt.save("nft", family),
  };
}

/** Reads of the kernel state, which a partial sync must not make. */
function reads(cmds: readonly CommandInput[]): string[] {
  return cmds.filter((c) =>
    (c.cmd === "ipvsadm" && (c.args[0] === "-Ln" || c.args[0] === "-Sn")) ||
    (c.cmd === "ipset" && c.args[0] === "save") ||
    (c.cmd === "ip" && c.args.includes("show")) ||
    c.cmd.endsWith("-save")
  ).map((c) => `${c.cmd} ${c.args.join(" ")}`);
}

/**
 * The next state as the tracker would hand it over: each port kept, replaced by the other
 * state's port of that key, or deleted, and `changed` naming exactly what differs.
 */
function mutate(prev: ProxyState, other: ProxyState, rand: () => number): ProxyState {
  const services = new Map<string, ServicePortState>();
  for (const key of new Set([...prev.services.keys(), ...other.services.keys()])) {
    const old = prev.services.get(key);
    const r = rand();
    const pick = r < 0.7 ? old : r < 0.9 ? other.services.get(key) : undefined;
    if (pick !== undefined) services.set(key, pick);
  }
  const changed = new Set<string>();
  for (const key of new Set([...prev.services.keys(), ...services.keys()])) {
    if (prev.services.get(key) !== services.get(key)) changed.add(key);
  }
  return { ...prev, services, changed, forceFullSync: false };
}

for (const family of ["IPv4", "IPv6"] as const) {
  Deno.test(`createIpvsProxier() [${family}] partial syncs read nothing and leave the node as a full sync from empty would`, async () => {
    const rand = prng(7);
    const n = fakeNode();
    const p = proxier(n, family);
    let s = generateState(1, 40, family);
    await p.sync(s);
    let partial = 0;
    for (let step = 0; step < 12; step++) {
      s = mutate(s, generateState(100 + step, 40, family), rand);
      const from = n.seen.length;
      const report = await p.sync(s);
      if (!report.full) {
        partial++;
        assert.deepEqual(reads(n.seen.slice(from)), [], `step ${step} read the kernel`);
      }
      const fresh = fakeNode();
      await proxier(fresh, family).sync({ ...s, forceFullSync: true });
      const [got, want] = [await held(n, family), await held(fresh, family)];
      assert.deepEqual(got.vs, want.vs, `step ${step}: virtual servers`);
      assert.deepEqual(got.sets, want.sets, `step ${step}: sets`);
      assert.deepEqual(got.addrs, want.addrs, `step ${step}: kube-ipvs0`);
      assert.equal(got.ipt, want.ipt, `step ${step}: iptables`);
    }
    assert.ok(partial >= 8, `only ${partial} of 12 syncs were partial`);
    // Removed TCP real servers drained (their counts are not read); the check ends them.
    await p.checkDraining();
    assert.deepEqual((await held(n, family)).draining, []);
    assert.equal(p.draining.size, 0);
  });
}

Deno.test("createIpvsProxier() partial sync writes one ipvsadm -R for a moved endpoint and nothing else", async () => {
  const n = fakeNode();
  const p = proxier(n);
  const web = (ip: string) => port(svc({ nodePort: 30080 }), [ep("10.0.1.1"), ep(ip)]);
  const db = port(svc({ name: "db", clusterIP: "172.30.0.42", port: 5432 }), [ep("10.0.3.1")]);
  await p.sync(state([web("10.0.2.1"), db]));
  const from = n.seen.length;
  const report = await p.sync(state([web("10.0.2.2"), db], { changed: [key()] }));
  assert.equal(report.full, false);
  const cmds = n.seen.slice(from);
  assert.deepEqual(cmds.map((c) => `${c.cmd} ${c.args.join(" ")}`), ["ipvsadm -R"]);
  assert.deepEqual(cmds[0]!.stdin!.trim().split("\n").sort(), [
    "-a -t 172.30.0.41:80 -r 10.0.2.2:80 -m -w 1",
    "-a -t 192.168.0.2:30080 -r 10.0.2.2:80 -m -w 1",
    "-e -t 172.30.0.41:80 -r 10.0.2.1:80 -m -w 0",
    "-e -t 192.168.0.2:30080 -r 10.0.2.1:80 -m -w 0",
  ]);
});

Deno.test("createIpvsProxier() partial sync rewrites the iptables rules only when they change", async () => {
  const n = fakeNode();
  const p = proxier(n);
  const plain = port(svc(), [ep("10.0.1.1")]);
  await p.sync(state([plain]));
  const restores = () => n.seen.filter((c) => c.cmd.endsWith("-restore")).length;
  const before = restores();
  // A first external IP fills KUBE-EXTERNAL-IP, whose rules upstream writes only then.
  await p.sync(state([port(svc({ externalIPs: ["198.51.100.7"] }), [ep("10.0.1.1")])]));
  assert.equal(restores(), before + 1);
  assert.match(n.ipt.save("nft", "IPv4"), /KUBE-EXTERNAL-IP/);
  await p.sync(state([port(svc({ externalIPs: ["198.51.100.7"] }), [ep("10.0.1.2")])]));
  assert.equal(restores(), before + 1, "an endpoint change leaves the rules alone");
});

Deno.test("createIpvsProxier() after a failed partial write, the next sync reads the kernel and converges", async () => {
  const n = fakeNode();
  const p = proxier(n);
  await p.sync(state([port(svc(), [ep("10.0.1.1")])]));
  const next = state([
    port(svc(), [ep("10.0.1.2")]),
    port(svc({ name: "db", clusterIP: "172.30.0.42", port: 5432 }), [ep("10.0.3.1", 5432)]),
  ]);
  n.ipvs.failRestoreContaining("172.30.0.42");
  await assert.rejects(p.sync(next), /ipvsadm -R/);
  n.ipvs.failRestoreContaining(null);
  const from = n.seen.length;
  assert.equal((await p.sync({ ...next, changed: new Set() })).full, true);
  assert.ok(reads(n.seen.slice(from)).includes("ipvsadm -Ln"));
  await p.checkDraining();
  const fresh = fakeNode();
  await proxier(fresh).sync(next);
  assert.deepEqual(await held(n), await held(fresh));
});

Deno.test("createIpvsProxier() keeps a ClusterIP bound while another port of the service still uses it", async () => {
  const n = fakeNode();
  const p = proxier(n);
  const http = port(svc(), [ep("10.0.1.1")]);
  const https = port(svc({ portName: "p443", port: 443 }), [ep("10.0.1.1", 443)]);
  await p.sync(state([http, https]));
  await p.sync(state([https]));
  assert.deepEqual(n.ip.addresses("kube-ipvs0"), ["172.30.0.41"]);
  assert.deepEqual(n.ipset.members("KUBE-IPVS-IPS"), ["172.30.0.41"]);
  await p.sync(state([]));
  assert.deepEqual(n.ip.addresses("kube-ipvs0"), []);
  assert.deepEqual(n.ipset.members("KUBE-IPVS-IPS"), []);
});

Deno.test("createIpvsProxier() keeps a virtual server two ports claim when one of them goes", async () => {
  const n = fakeNode();
  const p = proxier(n);
  const a = port(svc({ externalIPs: ["198.51.100.7"] }), [ep("10.0.1.1")]);
  const b = port(svc({ name: "b", clusterIP: "172.30.0.42", externalIPs: ["198.51.100.7"] }), [
    ep("10.0.2.1"),
  ]);
  await p.sync(state([a]));
  await p.sync(state([a, b]));
  // The tracker names only the port that went; the full sync made b the owner.
  const last = state([a], { changed: [key("ns1", "b")] });
  await p.sync(last);
  const fresh = fakeNode();
  await proxier(fresh).sync(last);
  await p.checkDraining();
  assert.deepEqual(await held(n), await held(fresh));
  assert.ok(n.ipvs.services.get("TCP 198.51.100.7:80")?.reals.has("10.0.1.1:80"));
});
