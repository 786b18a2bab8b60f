/**
 * What a sync reports it wrote (kubeproxy_sync_proxy_rules_iptables_last{table}): the `-A`
 * lines per table of the restore input the fake iptables received, as upstream's gauge counts
 * the rules of its restore input.
 */
import assert from "node:assert/strict";
import type { FakeIptables } from "../../support/fake_iptables.ts";
import { setup, SVC1, twoEndpoints } from "./proxier_fixtures.ts";
import { ep, key, sps, state, svc } from "./state_fixtures.ts";

const lastRestoreInput = (fake: FakeIptables) =>
  fake.calls.findLast((c) => c.cmd.endsWith("-restore"))!.stdin ?? "";

/** The `-A` lines of each table in a restore input (a table not written has none). */
function rulesPerTable(input: string): { nat: number; filter: number } {
  const out = { nat: 0, filter: 0 };
  let table = "";
  for (const line of input.split("\n")) {
    if (line.startsWith("*")) table = line.slice(1);
    else if (line.startsWith("-A ") && (table === "nat" || table === "filter")) out[table]++;
  }
  return out;
}

Deno.test("IptablesProxier.sync() on a new node reports every rendered rule written, not the jumps it inserts", async () => {
  const { fake, proxier } = setup();
  const report = await proxier.sync(twoEndpoints());
  const input = lastRestoreInput(fake);
  assert.match(input, /^-I PREROUTING /m, "the jumps go in the same input");
  assert.deepEqual(report.written, rulesPerTable(input));
  assert.deepEqual(report.written, report.counts, "nothing was there to leave out");
  assert.ok(report.written!.nat > 0 && report.written!.filter > 0);
});

Deno.test("IptablesProxier.sync() partial reports only the rules of what changed", async () => {
  const { fake, proxier } = setup();
  const both = state([
    sps(svc(), [ep("10.180.0.1"), ep("10.180.0.2")]),
    sps(svc({ name: "svc2", clusterIP: "172.30.0.42" }), [ep("10.180.0.3")]),
  ]);
  await proxier.sync(both);

  // svc1 loses an endpoint: its chains only; KUBE-SERVICES and the filter table are unchanged.
  const moved = state([
    sps(svc(), [ep("10.180.0.1")]),
    sps(svc({ name: "svc2", clusterIP: "172.30.0.42" }), [ep("10.180.0.3")]),
  ], { changed: [key()] });
  const partial = await proxier.sync(moved);
  const input = lastRestoreInput(fake);
  assert.equal(partial.full, false);
  assert.doesNotMatch(input, /\*filter|-A KUBE-SERVICES /);
  assert.match(input, new RegExp(`^-A ${SVC1} `, "m"));
  assert.deepEqual(partial.written, rulesPerTable(input));
  assert.equal(partial.written!.filter, 0);
  assert.ok(partial.written!.nat > 0 && partial.written!.nat < partial.counts.nat!);

  // svc2 goes: KUBE-SERVICES is rewritten, svc2's chains deleted (`-X` lines are no rules).
  const gone = await proxier.sync(
    state([sps(svc(), [ep("10.180.0.1")])], { changed: [key("ns1", "svc2")] }),
  );
  const deleting = lastRestoreInput(fake);
  assert.match(deleting, /^-X KUBE-SVC-/m);
  assert.match(deleting, /^-A KUBE-SERVICES /m);
  assert.deepEqual(gone.written, rulesPerTable(deleting));
});
