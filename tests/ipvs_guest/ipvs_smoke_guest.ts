/**
 * Runs INSIDE the IPVS guest (tests/e2e/ipvs_guest_test.ts boots it and runs this file): proves
 * the guest can do what IPVS mode needs, with real packets in network namespaces. A kube-ipvs0
 * dummy holds the VIP, ipvsadm balances it round-robin over two pods, and an ipset matched by
 * iptables `-m set` filters it. Named `*_guest.ts` so the host's `deno test tests/` skips it.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16, external 203.0.113.2.
 */
import assert from "node:assert/strict";
import { createTopology, type ProbeAnswer, type Topology } from "../../scripts/netns/mod.ts";

const VIP = "172.30.0.10";
const POD_A = "10.0.1.2", POD_B = "10.0.2.2";

/** Fails loudly when run anywhere but a kernel with IPVS (the guest). */
async function requireIpvsKernel(): Promise<void> {
  try {
    await Deno.stat("/proc/net/ip_vs");
  } catch {
    throw new Error(
      "No IPVS in this kernel (/proc/net/ip_vs is missing): run this file inside the IPVS guest through tests/e2e/ipvs_guest_test.ts",
    );
  }
}

async function withIpvsNode(prefix: string, body: (topo: Topology) => Promise<void>) {
  await requireIpvsKernel();
  const topo = await createTopology({
    prefix,
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }],
  });
  try {
    await body(topo);
  } catch (err) {
    console.error(topo.logs());
    throw err;
  } finally {
    await topo.destroy();
  }
}

async function sh(topo: Topology, ns: string, cmd: string, args: string[], stdin?: string) {
  const out = await topo.exec(ns, cmd, args, stdin === undefined ? {} : { stdin });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")} exited ${out.code}: ${out.stderr}`);
  return out.stdout;
}

function names(answers: ProbeAnswer[]): string[] {
  return answers.map((a) => a.ok ? a.name : `error:${a.error}`);
}

/** True when consecutive answers never repeat a pod and both pods answered. */
function alternates(seq: string[]): boolean {
  return new Set(seq).size === 2 && seq.every((n, i) => i === 0 || n !== seq[i - 1]);
}

Deno.test("guest: an ipvsadm rr virtual server on kube-ipvs0 alternates TCP and UDP between pods", async () => {
  await withIpvsNode("kvm", async (topo) => {
    await topo.startEchoServers({ tcp: [8080], udp: [8080] });
    await sh(
      topo,
      "node",
      "ip",
      ["-batch", "-"],
      [
        "link add kube-ipvs0 type dummy",
        `addr add ${VIP}/32 dev kube-ipvs0`,
        "",
      ].join("\n"),
    );
    const rules = ["-t", "-u"].flatMap((proto) => {
      const port = proto === "-t" ? 80 : 53;
      return [
        `-A ${proto} ${VIP}:${port} -s rr`,
        `-a ${proto} ${VIP}:${port} -r ${POD_A}:8080 -m -w 1`,
        `-a ${proto} ${VIP}:${port} -r ${POD_B}:8080 -m -w 1`,
      ];
    });
    await sh(topo, "node", "ipvsadm", ["-R"], rules.join("\n") + "\n");

    const tcp = await topo.probe({
      from: "external",
      proto: "tcp",
      to: `${VIP}:80`,
      count: 6,
      concurrency: 1,
    });
    assert.ok(alternates(names(tcp)), `TCP answers ${names(tcp).join(",")}`);
    for (const a of tcp) assert.ok(a.ok && a.peer.startsWith("203.0.113.2:"), JSON.stringify(a));
    const udp = await topo.probe({
      from: "external",
      proto: "udp",
      to: `${VIP}:53`,
      count: 6,
      concurrency: 1,
    });
    assert.ok(alternates(names(udp)), `UDP answers ${names(udp).join(",")}`);

    const conns = await sh(topo, "node", "ipvsadm", ["-Lnc"]);
    assert.match(conns, new RegExp(`TCP .*${VIP.replaceAll(".", "\\.")}:80 +${POD_A}:8080`));
    assert.match(conns, new RegExp(`UDP .*${VIP.replaceAll(".", "\\.")}:53 +${POD_B}:8080`));
  });
});

Deno.test("guest: iptables -m set matches an ipset's members as they change", async () => {
  await withIpvsNode("kvmset", async (topo) => {
    await topo.startEchoServers({ pods: ["pod-a"], tcp: [8080], udp: [] });
    await sh(
      topo,
      "node",
      "ipset",
      ["restore"],
      [
        "create KUBE-CLUSTER-IP hash:ip,port family inet hashsize 1024 maxelem 65536",
        `add KUBE-CLUSTER-IP ${POD_A},tcp:8080`,
        "",
      ].join("\n"),
    );
    await sh(topo, "node", "iptables", [
      "-I",
      "FORWARD",
      "-p",
      "tcp",
      "-m",
      "set",
      "--match-set",
      "KUBE-CLUSTER-IP",
      "dst,dst",
      "-j",
      "REJECT",
      "--reject-with",
      "tcp-reset",
    ]);
    const probe = () =>
      topo.probe({ from: "external", proto: "tcp", to: `${POD_A}:8080`, count: 1 });
    assert.deepEqual(names(await probe()), ["error:refused"]);
    await sh(topo, "node", "ipset", ["del", "KUBE-CLUSTER-IP", `${POD_A},tcp:8080`]);
    assert.deepEqual(names(await probe()), ["pod-a"]);
    assert.match(await sh(topo, "node", "ipset", ["list", "-n"]), /^KUBE-CLUSTER-IP$/m);
  });
});
