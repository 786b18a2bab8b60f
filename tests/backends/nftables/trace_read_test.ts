/**
 * The nftables tracer's read side against real nft: the rendered table is loaded into a
 * throwaway network namespace, read back with `nft list table` (read-only), parsed, and every
 * packet of a grid must trace exactly as it does over the rendered model. Also: what nft
 * prints back that the renderer never writes, and refusals of unknown expressions.
 */
import { MODE_CONFIG_SECTIONS } from "../../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { fullTransaction } from "../../../lib/backends/nftables/transaction.ts";
import { defaultConfig } from "../../../lib/config/mod.ts";
import { type CommandRunner, denoCommandRunner, runChecked } from "../../../lib/exec/mod.ts";
import type { ProxyState } from "../../../lib/proxy/mod.ts";
import type { TracePacket } from "../../../lib/trace/decision.ts";
import { nftablesTracer } from "../../../lib/backends/nftables/tracer.ts";
import { parseNftRule } from "../../../lib/backends/nftables/_trace_rule_parse.ts";
import { parseNftTableListing } from "../../../lib/backends/nftables/_trace_table_text.ts";
import {
  addNamespaces,
  deleteNamespaces,
  requireCommands,
  requireNetnsSupport,
} from "../../../scripts/netns/namespaces.ts";
import { familyPlan, generatePackets, generateState } from "../../support/trace_states.ts";
import { handState, NODE, NODE_IP, packet } from "../../trace/mode_tracer_fixtures.ts";

const NS = "tm-nftread";

/** Runs commands inside the namespace. */
const inNamespace: CommandRunner = (input) =>
  denoCommandRunner({ ...input, cmd: "ip", args: ["netns", "exec", NS, input.cmd, ...input.args] });

/** Every (source, destination, port, protocol) the hand state makes interesting, and some not. */
function grid(): TracePacket[] {
  const out: TracePacket[] = [];
  const from = { pod: "10.0.3.3", node: NODE_IP, external: "203.0.113.2" } as const;
  const dests = [
    "172.30.0.10",
    "172.30.0.11",
    "172.30.0.12",
    "172.30.0.13",
    "172.30.0.14",
    "172.30.0.15",
    "172.30.0.16",
    "172.30.9.9",
    "10.96.0.1",
    "5.6.7.8",
    "1.2.3.4",
    "1.2.3.5",
    NODE_IP,
    "8.8.8.8",
  ];
  const ports = [53, 80, 81, 30080, 30081, 30082, 30084];
  for (const source of ["pod", "node", "external"] as const) {
    for (const to of dests) {
      for (const p of ports) {
        for (const proto of ["tcp", "udp"] as const) {
          out.push(packet(source, from[source], to, p, proto));
        }
      }
    }
  }
  out.push(packet("external", "198.51.100.7", "5.6.7.8", 80));
  out.push(packet("pod", "10.0.2.2", "172.30.0.10", 80));
  return out;
}

/** Loads the rendering of `state` into namespace `ns`, reads it back, and traces the grid on both. */
async function readBackTracesAsRendered(ns: string, state: ProxyState): Promise<void> {
  await requireNetnsSupport();
  requireCommands(["nft", "ip"]);
  const runner: CommandRunner = (input) =>
    denoCommandRunner({
      ...input,
      cmd: "ip",
      args: ["netns", "exec", ns, input.cmd, ...input.args],
    });
  await deleteNamespaces([ns]);
  await addNamespaces([ns]);
  try {
    const config = {
      ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
      clusterCIDRs: ["10.0.0.0/8"],
    };
    const rendered = nftablesTracer.rendered(config, state);
    await runChecked(runner, {
      cmd: "nft",
      args: ["-f", "-"],
      stdin: fullTransaction(rendered).script,
    });
    const read = await nftablesTracer.read(runner, "IPv4");
    assert.equal(read.family, "ip");
    assert.deepEqual([...read.chains.keys()].sort(), [...rendered.chains.keys()].sort());
    let forwards = 0;
    const drops = new Set<string>();
    for (const p of grid()) {
      const a = nftablesTracer.trace(rendered, p, NODE);
      const b = nftablesTracer.trace(read, p, NODE);
      assert.deepEqual(b, a, JSON.stringify(p));
      if (a.decision.kind === "forward") forwards++;
      if (a.decision.kind === "drop") drops.add(a.decision.reason);
    }
    assert.ok(forwards > 20, `only ${forwards} forwarded packets in the grid`);
    if (state.serviceCIDRs.length > 0) {
      assert.ok(drops.has("unallocated-cluster-ip"), [...drops].join());
    }
  } finally {
    await deleteNamespaces([ns]);
  }
}

Deno.test("nftables read: a table read back from the kernel traces exactly as rendered", async () => {
  await readBackTracesAsRendered(NS, handState());
});

Deno.test("nftables read: the ServiceCIDR drop rule reads back (one CIDR and a set of two)", async () => {
  await readBackTracesAsRendered("sc-nftread1", {
    ...handState(),
    serviceCIDRs: ["172.30.0.0/16"],
  });
  await readBackTracesAsRendered("sc-nftread2", {
    ...handState(),
    serviceCIDRs: ["10.96.0.0/12", "172.30.0.0/16"],
  });
});

Deno.test("nftables read: generated IPv4 and IPv6 tables read back trace as rendered", async () => {
  await requireNetnsSupport();
  requireCommands(["nft", "ip"]);
  await deleteNamespaces([NS]);
  await addNamespaces([NS]);
  try {
    const config = {
      ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
      clusterCIDRs: ["10.0.0.0/8", "fd00:10::/64"],
    };
    for (const family of ["IPv4", "IPv6"] as const) {
      const state = generateState(1313, 30, family);
      const rendered = nftablesTracer.rendered(config, state);
      const script = fullTransaction(rendered).script;
      await runChecked(inNamespace, { cmd: "nft", args: ["-f", "-"], stdin: script });
      const read = await nftablesTracer.read(inNamespace, family);
      assert.equal(read.family, family === "IPv4" ? "ip" : "ip6");
      const plan = familyPlan(family);
      const node = { localAddresses: [plan.nodeIP, plan.loopback] };
      const packets = generatePackets(state);
      for (const p of packets) {
        assert.deepEqual(
          nftablesTracer.trace(read, p, node),
          nftablesTracer.trace(rendered, p, node),
          JSON.stringify(p),
        );
      }
      assert.ok(packets.length > 100, `${family}: only ${packets.length} packets`);
    }
  } finally {
    await deleteNamespaces([NS]);
  }
});

Deno.test("nftables read: nft's printed spellings read as the written ones", () => {
  assert.deepEqual(
    parseNftRule("meta mark set meta mark | 0x00004000"),
    parseNftRule("mark set mark or 0x4000"),
  );
  assert.deepEqual(
    parseNftRule("meta mark & 0x00004000 == 0x00000000 return"),
    parseNftRule("mark and 0x4000 == 0 return"),
  );
  assert.deepEqual(
    parseNftRule("jhash ip saddr . tcp sport mod 2 seed 0x6b707279 1 dnat to 10.0.1.1:80"),
    parseNftRule("jhash ip saddr . th sport mod 2 seed 0x6b707279 == 1 dnat ip to 10.0.1.1:80"),
  );
  const listing = [
    "table ip kube-proxy {",
    '\tcomment "rules for kube-proxy"',
    "\tset affinity-X {",
    "\t\ttype ipv4_addr",
    "\t\tflags dynamic,timeout",
    "\t\ttimeout 1m40s",
    "\t\telements = { 10.0.3.3 timeout 1m40s expires 1m12s,",
    "\t\t\t     10.0.3.4 timeout 1m40s expires 5s }",
    "\t}",
    "\tchain filter-prerouting-pre-dnat {",
    "\t\ttype filter hook prerouting priority dstnat - 10; policy accept;",
    "\t\tct state new jump firewall-check",
    "\t}",
    "}",
  ].join("\n");
  const t = parseNftTableListing(listing);
  assert.equal(t.comment, "rules for kube-proxy");
  assert.deepEqual([...t.sets.get("affinity-X")!.elements.keys()], ["10.0.3.3", "10.0.3.4"]);
  assert.deepEqual(t.chains.get("filter-prerouting-pre-dnat")!.hook, {
    type: "filter",
    hook: "prerouting",
    priority: -110,
  });
});

Deno.test("nftables read: an expression the renderer never writes is refused by name", () => {
  assert.throws(
    () => parseNftRule("ip daddr 10.0.0.1 counter packets 3 bytes 180 accept"),
    /Unknown nft expression "counter packets 3/,
  );
  assert.throws(() => parseNftTableListing("chain x {\n}\n"), /Not an nft table listing/);
});
