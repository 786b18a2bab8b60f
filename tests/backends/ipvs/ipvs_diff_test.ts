import assert from "node:assert/strict";
import { parseIpvsadmList, parseIpvsadmSave } from "../../../lib/backends/ipvs/ipvsadm_parser.ts";
import { computeIpvsDesiredState } from "../../../lib/backends/ipvs/_desired_state.ts";
import {
  GracefulTerminationList,
  planDrainCheck,
} from "../../../lib/backends/ipvs/_graceful_termination.ts";
import { buildIpsetRestore } from "../../../lib/backends/ipvs/_ipset_diff.ts";
import { parseIpsetSave } from "../../../lib/backends/ipvs/_ipset_parser.ts";
import {
  commitIpvsDiff,
  diffIpvs,
  ipvsadmRestoreInput,
  type IpvsDiff,
} from "../../../lib/backends/ipvs/_ipvs_diff.ts";
import { type IpvsOptions } from "../../../lib/backends/ipvs/ipvs_options.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import { createFakeIpset, type FakeIpset } from "../../support/fake_ipset.ts";
import { createFakeIpvsadm, type FakeIpvsadm } from "../../support/fake_ipvsadm.ts";
import { ep, port, state, svc } from "./fixtures.ts";

interface Node {
  readonly ipvs: FakeIpvsadm;
  readonly ipset: FakeIpset;
  readonly draining: GracefulTerminationList;
}

function node(): Node {
  return {
    ipvs: createFakeIpvsadm(),
    ipset: createFakeIpset(),
    draining: new GracefulTerminationList(),
  };
}

/** One sync of the virtual servers and sets, as the applier does it; returns the IPVS diff. */
async function sync(n: Node, s: ProxyState, options: IpvsOptions = {}): Promise<IpvsDiff> {
  const desired = computeIpvsDesiredState(s, options);
  const saved = await n.ipset.run({ cmd: "ipset", args: ["save"] });
  const restore = buildIpsetRestore(desired.ipsets, parseIpsetSave(saved.stdout), s.family);
  const r1 = await n.ipset.run({ cmd: "ipset", args: ["restore"], stdin: restore });
  assert.equal(r1.code, 0, r1.stderr);
  const listed = await n.ipvs.run({ cmd: "ipvsadm", args: ["-Ln"] });
  const diff = diffIpvs(desired.virtualServers, parseIpvsadmList(listed.stdout).table, {
    family: s.family,
    excludeCIDRs: desired.config.excludeCIDRs,
    draining: n.draining,
  });
  const r2 = await n.ipvs.run({
    cmd: "ipvsadm",
    args: ["-R"],
    stdin: ipvsadmRestoreInput(diff.lines),
  });
  assert.equal(r2.code, 0, r2.stderr);
  commitIpvsDiff(diff, n.draining);
  return diff;
}

async function saveLines(n: Node): Promise<string[]> {
  const out = await n.ipvs.run({ cmd: "ipvsadm", args: ["-Sn"] });
  return out.stdout.trim().split("\n").filter((l) => l !== "").sort();
}

async function ipsetLines(n: Node): Promise<string[]> {
  const out = await n.ipset.run({ cmd: "ipset", args: ["save"] });
  return out.stdout.trim().split("\n").sort();
}

const before = () =>
  state([
    port(svc({ nodePort: 30080 }), [ep("10.0.1.1"), ep("10.0.2.1", 80, { isLocal: true })]),
    port(
      svc({ name: "dns", clusterIP: "172.30.0.10", port: 53, protocol: "UDP", portName: "dns" }),
      [
        ep("10.0.3.1", 53),
        ep("10.0.3.2", 53),
      ],
    ),
    port(svc({ name: "gone", clusterIP: "172.30.0.50" }), [ep("10.0.5.1")]),
  ]);

const after = () =>
  state([
    port(svc({ nodePort: 30080, stickyMaxAgeSeconds: 600 }), [
      ep("10.0.1.1"),
      ep("10.0.2.1", 80, { isLocal: true }),
      ep("10.0.4.1"),
    ]),
    port(
      svc({ name: "dns", clusterIP: "172.30.0.10", port: 53, protocol: "UDP", portName: "dns" }),
      [
        ep("10.0.3.1", 53),
      ],
    ),
    port(svc({ name: "new", clusterIP: "172.30.0.60", externalIPs: ["198.51.100.7"] }), [
      ep("10.0.6.1"),
    ]),
  ]);

Deno.test("diffIpvs() from empty programs exactly the desired virtual servers and sets", async () => {
  const n = node();
  await sync(n, before());
  const desired = computeIpvsDesiredState(before());
  const held = parseIpvsadmSave((await n.ipvs.run({ cmd: "ipvsadm", args: ["-Sn"] })).stdout).table;
  assert.deepEqual([...held.keys()].sort(), [...desired.virtualServers.keys()].sort());
  for (const [key, want] of desired.virtualServers) {
    assert.deepEqual(
      [...held.get(key)!.realServers.keys()].sort(),
      [...want.realServers.keys()].sort(),
    );
  }
  assert.deepEqual(n.ipset.members("KUBE-CLUSTER-IP"), [
    "172.30.0.10,udp:53",
    "172.30.0.41,tcp:80",
    "172.30.0.50,tcp:80",
  ]);
  assert.deepEqual(n.ipset.members("KUBE-LOOP-BACK"), ["10.0.2.1,tcp:80,10.0.2.1"]);
  assert.equal(n.ipset.sets.size, 17);
});

Deno.test("diffIpvs() applies only the difference, and the result equals a fresh full apply", async () => {
  const n = node();
  await sync(n, before());
  const diff = await sync(n, after());
  assert.deepEqual([...diff.lines].sort(), [
    "-A -t 172.30.0.60:80 -s rr",
    "-A -t 198.51.100.7:80 -s rr",
    "-D -t 172.30.0.50:80",
    "-E -t 172.30.0.41:80 -s rr -p 600",
    "-E -t 192.168.0.2:30080 -s rr -p 600",
    "-a -t 172.30.0.41:80 -r 10.0.4.1:80 -m -w 1",
    "-a -t 172.30.0.60:80 -r 10.0.6.1:80 -m -w 1",
    "-a -t 192.168.0.2:30080 -r 10.0.4.1:80 -m -w 1",
    "-a -t 198.51.100.7:80 -r 10.0.6.1:80 -m -w 1",
    "-d -u 172.30.0.10:53 -r 10.0.3.2:53",
  ]);
  const fresh = node();
  await sync(fresh, after());
  assert.deepEqual(await saveLines(n), await saveLines(fresh));
  assert.deepEqual(await ipsetLines(n), await ipsetLines(fresh));
  // A second sync with nothing changed does nothing.
  assert.deepEqual((await sync(n, after())).lines, []);
});

Deno.test("diffIpvs() never deletes virtual servers in --ipvs-exclude-cidrs or of the other family, and deletes other strays", async () => {
  const n = node();
  for (
    const line of [
      "-A -t 10.96.200.1:80 -s rr",
      "-a -t 10.96.200.1:80 -r 10.0.9.9:80 -m -w 1",
      "-A -t [fd00:99::1]:80 -s rr",
      "-A -t 10.97.0.1:80 -s rr",
    ]
  ) {
    assert.equal((await n.ipvs.run({ cmd: "ipvsadm", args: line.split(" ") })).code, 0);
  }
  const diff = await sync(n, before(), { excludeCIDRs: ["10.96.0.0/16"] });
  assert.deepEqual(diff.deletedVirtualServers, ["10.97.0.1:80/TCP"]);
  const lines = await saveLines(n);
  assert.ok(lines.includes("-A -t 10.96.200.1:80 -s rr"));
  assert.ok(lines.includes("-a -t 10.96.200.1:80 -r 10.0.9.9:80 -m -w 1"));
  assert.ok(lines.includes("-A -t [fd00:99::1]:80 -s rr"));
  assert.ok(!lines.includes("-A -t 10.97.0.1:80 -s rr"));
});

Deno.test("graceful termination: a removed TCP real server drains at weight 0, UDP and SCTP ones go at once, a returning one is restored", async () => {
  const n = node();
  const two = state([
    port(svc(), [ep("10.0.1.1"), ep("10.0.2.1")]),
    port(svc({ name: "u", clusterIP: "172.30.0.42", protocol: "UDP" }), [
      ep("10.0.1.1"),
      ep("10.0.2.1"),
    ]),
    port(svc({ name: "s", clusterIP: "172.30.0.43", protocol: "SCTP" }), [
      ep("10.0.1.1"),
      ep("10.0.2.1"),
    ]),
  ]);
  const one = state([
    port(svc(), [ep("10.0.1.1")]),
    port(svc({ name: "u", clusterIP: "172.30.0.42", protocol: "UDP" }), [ep("10.0.1.1")]),
    port(svc({ name: "s", clusterIP: "172.30.0.43", protocol: "SCTP" }), [ep("10.0.1.1")]),
  ]);
  await sync(n, two);
  n.ipvs.setConnections("TCP 172.30.0.41:80", "10.0.2.1:80", 1, 2);
  n.ipvs.setConnections("UDP 172.30.0.42:80", "10.0.2.1:80", 0, 5);
  n.ipvs.setConnections("SCTP 172.30.0.43:80", "10.0.2.1:80", 3, 0);

  const removal = await sync(n, one);
  assert.deepEqual(removal.lines, [
    "-d --sctp-service 172.30.0.43:80 -r 10.0.2.1:80",
    "-e -t 172.30.0.41:80 -r 10.0.2.1:80 -m -w 0",
    "-d -u 172.30.0.42:80 -r 10.0.2.1:80",
  ]);
  assert.equal(n.draining.size, 1);
  assert.equal(n.ipvs.services.get("TCP 172.30.0.41:80")!.reals.get("10.0.2.1:80")!.weight, 0);
  // Later syncs leave the draining real server alone.
  assert.deepEqual((await sync(n, one)).lines, []);

  // The check keeps it while it has connections, deletes it once they are gone.
  const listed = async () =>
    parseIpvsadmList((await n.ipvs.run({ cmd: "ipvsadm", args: ["-Ln"] })).stdout).table;
  assert.deepEqual(planDrainCheck(n.draining, await listed()).lines, []);
  n.ipvs.setConnections("TCP 172.30.0.41:80", "10.0.2.1:80", 0, 0);
  const plan = planDrainCheck(n.draining, await listed());
  assert.deepEqual(plan.lines, ["-d -t 172.30.0.41:80 -r 10.0.2.1:80"]);
  assert.equal(plan.finished.length, 1);

  // Had it come back while draining, upstream deletes and re-adds it with weight 1.
  const back = await sync(n, two);
  assert.deepEqual(back.lines.slice(1, 3), [
    "-d -t 172.30.0.41:80 -r 10.0.2.1:80",
    "-a -t 172.30.0.41:80 -r 10.0.2.1:80 -m -w 1",
  ]);
  assert.equal(n.draining.size, 0);
  assert.equal(n.ipvs.services.get("TCP 172.30.0.41:80")!.reals.get("10.0.2.1:80")!.weight, 1);
});

Deno.test("graceful termination: a TCP real server without connections is deleted at once, and deleting its VS clears the list", async () => {
  const n = node();
  await sync(n, state([port(svc(), [ep("10.0.1.1"), ep("10.0.2.1")])]));
  const d1 = await sync(n, state([port(svc(), [ep("10.0.1.1")])]));
  assert.deepEqual(d1.lines, ["-d -t 172.30.0.41:80 -r 10.0.2.1:80"]);
  n.ipvs.setConnections("TCP 172.30.0.41:80", "10.0.1.1:80", 4, 0);
  await sync(n, state([port(svc())]));
  assert.equal(n.draining.size, 1);
  await sync(n, state([]));
  assert.equal(n.draining.size, 0);
  assert.deepEqual(await saveLines(n), []);
});

Deno.test("an untrusted service port never reaches ipvsadm or ipset", async () => {
  const n = node();
  await sync(
    n,
    state([
      port(
        svc({
          loadBalancerIPs: ["203.0.114.1"],
          loadBalancerSourceRanges: ["0.0.0.0/0 -j ACCEPT"],
        }),
      ),
      port(svc({ name: "bad", clusterIP: "172.30.0.66", port: 70000 })),
      port(svc({ name: "ok", clusterIP: "172.30.0.67" }), [ep("10.0.1.1")]),
    ]),
  );
  const sent = [...n.ipvs.calls, ...n.ipset.calls].map((c) =>
    `${c.args.join(" ")}\n${c.stdin ?? ""}`
  ).join("\n");
  assert.ok(!sent.includes("203.0.114.1"));
  assert.ok(!sent.includes("172.30.0.41"));
  assert.ok(!sent.includes("172.30.0.66"));
  assert.ok(sent.includes("172.30.0.67"));
});
