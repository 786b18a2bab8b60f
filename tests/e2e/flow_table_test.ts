/** The flow-table runner's pure parts: per-mode expectations and how a case is judged. */
import assert from "node:assert/strict";
import { PACKET_FLOW_TABLES } from "./flows/packet_flows.ts";
import { judgeFlow } from "./support/flow_check.ts";
import { casesFor, type FlowCase } from "./support/flow_table.ts";

const localhost: FlowCase = {
  name: "node -> localhost NodePort",
  from: "node",
  to: "127.0.0.1:30080",
  expect: ["pod-a"],
  byMode: { nftables: { expect: "refused" } },
};

Deno.test("casesFor() gives each mode its own expectation where upstream's modes differ", () => {
  assert.deepEqual(casesFor("iptables", [localhost])[0]?.expect, ["pod-a"]);
  assert.equal(casesFor("nftables", [localhost])[0]?.expect, "refused");
  assert.ok(!("byMode" in casesFor("nftables", [localhost])[0]!));
});

Deno.test("the packet-flow tables name their namespaces uniquely and keep localhost NodePorts iptables-only", () => {
  const stems = PACKET_FLOW_TABLES.map((t) => t.stem);
  assert.equal(new Set(stems).size, stems.length);
  for (const s of stems) assert.match(s, /^[a-z0-9]{1,6}$/);
  const cases = PACKET_FLOW_TABLES.flatMap((t) => t.cases);
  const lo = cases.filter((c) => c.to.startsWith("127."));
  assert.ok(lo.length > 0);
  for (const c of lo) {
    assert.equal(casesFor("ipvs", [c])[0]?.expect, "refused", c.name);
    assert.equal(casesFor("nftables", [c])[0]?.expect, "refused", c.name);
  }
});

Deno.test("judgeFlow() with sticky wants every answer from one expected endpoint", () => {
  const c = { name: "affinity", from: "client", to: "172.30.0.40:80", expect: ["a", "b"] };
  const ok = (name: string) => ({ ok: true as const, name, peer: "10.0.3.2:40000" });
  assert.equal(judgeFlow({ ...c, sticky: true }, "10.0.3.2", [ok("a"), ok("a")]), null);
  assert.match(judgeFlow({ ...c, sticky: true }, "10.0.3.2", [ok("a"), ok("b")])!, /same one/);
  assert.match(judgeFlow({ ...c, sticky: true }, "10.0.3.2", [ok("c")])!, /same one/);
  assert.equal(judgeFlow(c, "10.0.3.2", [ok("a"), ok("b")]), null);
});

Deno.test("the packet-flow tables give ipvs upstream's ETP Local fallback to remote endpoints, un-SNATed", () => {
  const cases = PACKET_FLOW_TABLES.flatMap((t) => t.cases);
  const remoteOnly = cases.filter((c) => c.name.startsWith("ETP Local, remote only: external"));
  assert.equal(remoteOnly.length, 3);
  for (const c of remoteOnly) {
    assert.equal(casesFor("iptables", [c])[0]?.expect, "timeout", c.name);
    const ipvs = casesFor("ipvs", [c])[0]!;
    assert.deepEqual([ipvs.expect, ipvs.masq], [["pod-r"], false], c.name);
  }
});
