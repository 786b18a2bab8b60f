import assert from "node:assert/strict";
import { setupProxyApp as setup, webService, webSlice } from "./proxy_app_fixtures.ts";

async function counter(c: { get(): Promise<{ values: { value: number }[] }> }): Promise<number> {
  return (await c.get()).values[0]?.value ?? 0;
}

Deno.test("createProxyApp() applies nothing before Services and EndpointSlices have synced", async () => {
  const t = setup();
  try {
    await t.clock.advance(0);
    t.sink().onEvent({ kind: "Service", type: "ADDED", object: webService });
    t.sink().onEvent({ kind: "EndpointSlice", type: "ADDED", object: webSlice(["10.0.1.2"]) });
    t.sink().onSynced("Service");
    await t.clock.advance(5000);
    assert.ok(!t.nat().includes("KUBE-SERVICES"), "synced before the EndpointSlices were listed");
    t.sink().onSynced("EndpointSlice");
    await t.clock.advance(1000);
    assert.match(t.nat(), /-d 172\.30\.0\.10 .*-j KUBE-SVC-/);
    assert.match(t.nat(), /DNAT --to-destination 10\.0\.1\.2:8080/);
    assert.ok(t.app.health.status().healthy);
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() keeps the old rules after a failed restore, counts it and retries with a full sync", async () => {
  const t = setup();
  try {
    await t.start(webSlice(["10.0.1.2"]));
    assert.match(t.nat(), /10\.0\.1\.2:8080/);

    t.ipt.failNextRestore("iptables-restore: line 3 failed");
    t.sink().onEvent({ kind: "EndpointSlice", type: "MODIFIED", object: webSlice(["10.0.2.2"]) });
    await t.clock.advance(0);
    assert.equal(await counter(t.metric("sync_proxy_rules_iptables_restore_failures_total")), 1);
    assert.match(t.nat(), /10\.0\.1\.2:8080/, "old rules must stay in place");
    assert.doesNotMatch(t.nat(), /10\.0\.2\.2:8080/);

    await t.clock.advance(2000);
    assert.match(t.nat(), /10\.0\.2\.2:8080/, "the retry applies the new state");
    assert.doesNotMatch(t.nat(), /10\.0\.1\.2:8080/);
    const full = await t.metric("sync_full_proxy_rules_duration_seconds").get() as {
      values: { metricName?: string; value: number }[];
    };
    assert.equal(
      full.values.find((v) => v.metricName?.endsWith("_count"))?.value,
      2,
      "first sync and the retry after the failure are full syncs",
    );
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() reports unhealthy when a queued change is not applied within 2 x syncPeriod", async () => {
  const t = setup();
  try {
    t.sink().onSynced("Service");
    t.sink().onSynced("EndpointSlice");
    await t.clock.advance(1000);
    t.broken.on = true;
    t.sink().onEvent({ kind: "Service", type: "ADDED", object: webService });
    await t.clock.advance(59_000);
    assert.equal(t.app.health.status().healthy, true, "still within 2 x syncPeriod");
    await t.clock.advance(2_000);
    assert.equal(t.app.health.status().healthy, false);
    t.broken.on = false;
    await t.clock.advance(31_000);
    // No endpoints: the service is rejected in the filter table.
    assert.match(t.ipt.save("legacy", "IPv4", "filter"), /172\.30\.0\.10 .*-j REJECT/);
    assert.equal(t.app.health.status().healthy, true);
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() repairs rules flushed behind its back within syncPeriod", async () => {
  const t = setup();
  try {
    await t.start(webSlice(["10.0.1.2"]));
    // What `iptables -t nat -F` plus a firewall reload does: every nat chain gone.
    const nat = t.ipt.table("legacy", "IPv4", "nat");
    for (const [name, chain] of nat) {
      if (chain.policy === "-") nat.delete(name);
      else chain.rules = [];
    }
    assert.doesNotMatch(t.nat(), /KUBE-/);
    await t.clock.advance(31_000);
    assert.match(t.nat(), /DNAT --to-destination 10\.0\.1\.2:8080/);
    assert.match(t.nat(), /KUBE-PROXY-CANARY/);
  } finally {
    await t.stop();
  }
});
