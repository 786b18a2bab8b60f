/**
 * The IPVS tracer's read side: the rendered ipsets, iptables rules and kube-ipvs0 addresses are
 * applied with the real tools in a throwaway network namespace and read back with the real
 * read-only commands (`ipset save`, `iptables-save`, `ip -o addr show dev kube-ipvs0`); this
 * kernel has no IPVS, so `ipvsadm` is the stateful fake holding the rendered virtual servers.
 * Every packet of a grid must trace as it does over the rendered objects.
 */
import { MODE_CONFIG_SECTIONS } from "../../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { defaultConfig } from "../../../lib/config/mod.ts";
import { type CommandRunner, denoCommandRunner, runChecked } from "../../../lib/exec/mod.ts";
import type { TracePacket } from "../../../lib/trace/decision.ts";
import { ipvsTracer } from "../../../lib/backends/ipvs/tracer.ts";
import { parseLinkAddresses } from "../../../lib/backends/ipvs/_trace_rules.ts";
import {
  addNamespaces,
  deleteNamespaces,
  requireCommands,
  requireNetnsSupport,
} from "../../../scripts/netns/namespaces.ts";
import { createFakeIpvsadm } from "../../support/fake_ipvsadm.ts";
import { handState, NODE, NODE_IP, packet } from "../../trace/mode_tracer_fixtures.ts";

const NS = "tm-ipvsread";

function grid(): TracePacket[] {
  const out: TracePacket[] = [];
  const from = { pod: "10.0.3.3", node: NODE_IP, external: "203.0.113.2" } as const;
  const dests = [
    "172.30.0.10",
    "172.30.0.12",
    "172.30.0.13",
    "172.30.0.14",
    "172.30.0.15",
    "172.30.0.16",
    "1.2.3.4",
    "1.2.3.5",
    NODE_IP,
    "8.8.8.8",
  ];
  for (const source of ["pod", "node", "external"] as const) {
    for (const to of dests) {
      for (const p of [53, 80, 81, 30080, 30082, 30084]) {
        for (const proto of ["tcp", "udp"] as const) {
          out.push(packet(source, from[source], to, p, proto));
        }
      }
    }
  }
  out.push(packet("pod", "10.0.2.2", "172.30.0.10", 80));
  return out;
}

Deno.test("ipvs read: objects read back with ipset save, iptables-save and ip addr trace as rendered", async () => {
  await requireNetnsSupport();
  requireCommands(["ipset", "iptables-nft-restore", "iptables-nft-save", "ip"]);
  const config = {
    ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
    clusterCIDRs: ["10.0.0.0/8"],
    mode: "ipvs" as const,
  };
  // Without the source-ranged LB: its KUBE-IPVS-OUT-FILTER rule needs `-m ipvs`, which this
  // kernel (no IPVS) refuses. The unit tests cover it over rendered rules.
  const state = handState();
  const services = new Map([...state.services].filter(([, s]) => s.info.name.name !== "lb"));
  const rendered = ipvsTracer.rendered(config, {
    ...state,
    services,
    changed: new Set(services.keys()),
  });
  const ipvsadm = createFakeIpvsadm();
  const ns: CommandRunner = (input) =>
    input.cmd === "ipvsadm" ? ipvsadm.run(input) : denoCommandRunner({
      ...input,
      cmd: "ip",
      args: ["netns", "exec", NS, input.cmd, ...input.args],
    });
  await deleteNamespaces([NS]);
  await addNamespaces([NS]);
  try {
    await runChecked(ns, { cmd: "ipvsadm", args: ["-R"], stdin: rendered.ipvsadm });
    await runChecked(ns, { cmd: "ipset", args: ["restore"], stdin: rendered.ipsets });
    await runChecked(ns, {
      cmd: "iptables-nft-restore",
      args: ["--noflush"],
      stdin: rendered.iptables,
    });
    // No dummy driver here: a veth named kube-ipvs0 holds the addresses just as well.
    await runChecked(ns, {
      cmd: "ip",
      args: ["link", "add", "kube-ipvs0", "type", "veth", "peer", "name", "tm-peer"],
    });
    const batch = rendered.addresses.map((a) => `addr add ${a}/32 dev kube-ipvs0\n`).join("");
    await runChecked(ns, { cmd: "ip", args: ["-batch", "-"], stdin: batch });

    const read = await ipvsTracer.read(ns, "IPv4");
    assert.deepEqual([...read.addresses].sort(), [...rendered.addresses].sort());
    assert.match(read.ipsets, /^add KUBE-CLUSTER-IP 172\.30\.0\.10,tcp:80$/m);
    assert.match(read.iptables, /-A KUBE-SERVICES .*--match-set KUBE-CLUSTER-IP dst,dst/);
    // The kernel has no names: attach the cluster state's, as `trace` does.
    const named = { ...read, serviceNames: rendered.serviceNames };
    let forwards = 0;
    for (const p of grid()) {
      const a = ipvsTracer.trace(rendered, p, NODE);
      const b = ipvsTracer.trace(named, p, NODE);
      assert.deepEqual(b.decision, a.decision, JSON.stringify(p));
      assert.deepEqual(b.path, a.path, JSON.stringify(p));
      if (a.decision.kind === "forward") forwards++;
    }
    assert.ok(forwards > 20, `only ${forwards} forwarded packets in the grid`);
  } finally {
    await deleteNamespaces([NS]);
  }
});

Deno.test("ipvs read: kube-ipvs0 addresses of one family from `ip -o addr show`", () => {
  const text = [
    "7: kube-ipvs0    inet 172.30.0.10/32 scope global kube-ipvs0\\       valid_lft forever preferred_lft forever",
    "7: kube-ipvs0    inet6 fd00:30:0::a/128 scope global \\       valid_lft forever preferred_lft forever",
  ].join("\n");
  assert.deepEqual(parseLinkAddresses(text, "IPv4"), ["172.30.0.10"]);
  assert.deepEqual(parseLinkAddresses(text, "IPv6"), ["fd00:30::a"]);
});
