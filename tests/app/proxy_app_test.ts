import assert from "node:assert/strict";
import type { V1EndpointSlice, V1Node, V1Service } from "@kubernetes/client-node";
import { Registry } from "../../lib/metrics/prom.ts";
import { createProxyApp } from "../../lib/app/proxy_app.ts";
import { createStateIntake } from "../../lib/app/state_intake.ts";
import { NO_BACKEND_METRICS } from "../../lib/backends/mod.ts";
import { silentLogger } from "../../lib/log/mod.ts";
import { createProxyMetrics } from "../../lib/metrics/mod.ts";
import { FakeClock } from "../support/fake_clock.ts";
import { setupProxyApp as setup, START, webService, webSlice } from "./proxy_app_fixtures.ts";

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

Deno.test("createProxyApp() reads the tables for the first sync once the start-up housekeeping is done", async () => {
  const housekeeping = Promise.withResolvers<void>();
  const t = setup(2, housekeeping.promise);
  const saves = () => t.ipt.calls.filter((c) => c.cmd.endsWith("-save")).length;
  try {
    await t.clock.advance(0);
    t.sink().onEvent({ kind: "Service", type: "ADDED", object: webService });
    await t.clock.advance(5000);
    assert.equal(saves(), 0, "the tables are read only after the housekeeping");
    housekeeping.resolve();
    await t.clock.advance(0);
    assert.equal(saves(), 2, "the first sync's reads (nat, filter) run while the lists come in");
    t.sink().onEvent({ kind: "EndpointSlice", type: "ADDED", object: webSlice(["10.0.1.2"]) });
    t.sink().onSynced("Service");
    t.sink().onSynced("EndpointSlice");
    await t.clock.advance(1000);
    assert.match(t.nat(), /DNAT --to-destination 10\.0\.1\.2:8080/);
    assert.equal(saves(), 2, "the first sync used them");
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() syncs only after the start-up housekeeping is done", async () => {
  const housekeeping = Promise.withResolvers<void>();
  const t = setup(2, housekeeping.promise);
  try {
    await t.clock.advance(0);
    t.sink().onEvent({ kind: "Service", type: "ADDED", object: webService });
    t.sink().onEvent({ kind: "EndpointSlice", type: "ADDED", object: webSlice(["10.0.1.2"]) });
    t.sink().onSynced("Service");
    t.sink().onSynced("EndpointSlice");
    await t.clock.advance(5000);
    assert.ok(!t.nat().includes("KUBE-SERVICES"), "synced before the housekeeping finished");
    housekeeping.resolve();
    await t.clock.advance(0);
    assert.match(t.nat(), /DNAT --to-destination 10\.0\.1\.2:8080/);
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

Deno.test("createProxyApp() on a dual-stack node syncs only the family a change is in, and retries a failed family alone", async () => {
  const t = setup(2, undefined, undefined, ["IPv4", "IPv6"]);
  const restoresOf = (cmd: string) => t.ipt.calls.filter((c) => c.cmd === cmd).length;
  const v4 = () => restoresOf("iptables-legacy-restore");
  const v6 = () => restoresOf("ip6tables-legacy-restore");
  const dual: V1Service = {
    metadata: { namespace: "demo", name: "dual" },
    spec: {
      clusterIP: "172.30.0.11",
      clusterIPs: ["172.30.0.11", "fd00:30::11"],
      ipFamilies: ["IPv4", "IPv6"],
      ports: [{ name: "http", port: 80, protocol: "TCP" }],
    },
  };
  const dualSlice6 = (ip: string): V1EndpointSlice => ({
    metadata: {
      namespace: "demo",
      name: "dual-6",
      labels: { "kubernetes.io/service-name": "dual" },
    },
    addressType: "IPv6",
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    endpoints: [{ addresses: [ip], conditions: { ready: true }, nodeName: "node1" }],
  });
  const nat6 = () => t.ipt.save("legacy", "IPv6", "nat");
  try {
    await t.start(webSlice(["10.0.1.2"]));
    assert.deepEqual([v4(), v6()], [1, 1], "the first sync writes both families");

    t.sink().onEvent({ kind: "EndpointSlice", type: "MODIFIED", object: webSlice(["10.0.2.2"]) });
    await t.clock.advance(2000);
    assert.deepEqual([v4(), v6()], [2, 1], "an IPv4 slice's change restores IPv4 alone");
    assert.match(t.nat(), /10\.0\.2\.2:8080/);

    // A dual-stack Service is in both families' rules.
    t.sink().onEvent({ kind: "Service", type: "ADDED", object: dual });
    await t.clock.advance(2000);
    assert.deepEqual([v4(), v6()], [3, 2], "a dual-stack Service restores both");

    // An IPv6 slice's change fails to apply: only IPv6 ran, and only IPv6 is retried, as a
    // full sync, though the retry's snapshot holds no change.
    t.ipt.failNextRestore("ip6tables-restore: line 3 failed");
    t.sink().onEvent({ kind: "EndpointSlice", type: "ADDED", object: dualSlice6("fd00:10::1:2") });
    await t.clock.advance(0);
    assert.deepEqual([v4(), v6()], [3, 3], "the IPv6 change runs IPv6 alone");
    assert.doesNotMatch(nat6(), /fd00:10::1:2/);
    await t.clock.advance(2000);
    assert.deepEqual([v4(), v6()], [3, 4], "the failed family is retried on its own");
    assert.match(nat6(), /\[fd00:10::1:2\]:8080/, "the retry applies the change");
    assert.match(t.lines.join("\n"), /"Synced proxy rules" family="IPv6" kind="full"[^\n]*$/m);

    // Nothing of either family changed: no restore at all.
    await t.clock.advance(5000);
    assert.deepEqual([v4(), v6()], [3, 4]);
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
    // What a firewall reload does: every chain of every table flushed and deleted.
    for (const table of ["mangle", "nat", "filter"]) {
      for (const op of ["-F", "-X"]) {
        await t.ipt.run({ cmd: "iptables-legacy", args: ["-t", table, op] });
      }
    }
    assert.doesNotMatch(t.nat(), /KUBE-/);
    await t.clock.advance(31_000);
    assert.match(t.nat(), /DNAT --to-destination 10\.0\.1\.2:8080/);
    assert.match(t.nat(), /KUBE-PROXY-CANARY/);
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() idles as upstream: no sync without changes but the hourly full one, a canary read per syncPeriod", async () => {
  const t = setup();
  try {
    await t.start(webSlice(["10.0.1.2"]));
    const reads = () => t.ipt.calls.filter((c) => !c.cmd.endsWith("-restore")).map((c) => c.args);
    const [restoresBefore, readsBefore] = [t.restores(), reads().length];
    await t.clock.advance(10 * 60_000);
    assert.equal(t.restores(), restoresBefore, "no restore in 10 idle minutes");
    const idleReads = reads().slice(readsBefore);
    assert.equal(idleReads.length, 20, "one canary read per 30 s syncPeriod");
    assert.ok(idleReads.every((a) => a.includes("mangle") && a.includes("KUBE-PROXY-CANARY")));
    await t.clock.advance(51 * 60_000);
    assert.equal(t.restores(), restoresBefore + 1, "the hourly sync");
    assert.match(t.lines.join("\n"), /kind="full"[^\n]*$/m);
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() syncs nothing for updates that change nothing: a new history's relist, a Node heartbeat", async () => {
  const t = setup();
  try {
    await t.start(webSlice(["10.0.1.2"]));
    const before = t.restores();
    const node = (rv: string, heartbeat: number): V1Node => ({
      metadata: { name: "node1", resourceVersion: rv, labels: { zone: "a" } },
      status: {
        conditions: [{ type: "Ready", status: "True", lastHeartbeatTime: new Date(heartbeat) }],
      },
    });
    t.sink().onEvent({ kind: "Node", type: "ADDED", object: node("1", 1) });
    await t.clock.advance(2000);
    const afterNode = t.restores();
    // What the reflector hands on after a relist from a server with a new history: the same
    // objects under new resourceVersions; then a heartbeat of the same Node.
    const again = <T extends { metadata?: object }>(o: T, rv: string): T => ({
      ...o,
      metadata: { ...o.metadata, resourceVersion: rv },
    });
    t.sink().onEvent({ kind: "Service", type: "MODIFIED", object: again(webService, "900") });
    t.sink().onEvent({
      kind: "EndpointSlice",
      type: "MODIFIED",
      object: again(webSlice(["10.0.1.2"]), "901"),
    });
    t.sink().onEvent({ kind: "Node", type: "MODIFIED", object: node("902", 2) });
    await t.clock.advance(5000);
    assert.equal(t.restores(), afterNode, "no restore for content that did not change");
    t.sink().onEvent({ kind: "EndpointSlice", type: "MODIFIED", object: webSlice(["10.0.1.3"]) });
    await t.clock.advance(2000);
    assert.equal(t.restores(), afterNode + 1, "a real change still syncs");
    assert.ok(afterNode >= before);
    assert.match(t.nat(), /DNAT --to-destination 10\.0\.1\.3:8080/);
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() collects the initial lists' garbage once, right before the first sync", async () => {
  const t = setup();
  try {
    t.sink().onEvent({ kind: "Service", type: "ADDED", object: webService });
    await t.clock.advance(1000);
    assert.deepEqual(t.regularCollections, [], "not before the lists are in");
    await t.start(webSlice(["10.0.1.2"]));
    assert.deepEqual(t.regularCollections, [0], "once, before the first restore");
    t.sink().onEvent({ kind: "EndpointSlice", type: "MODIFIED", object: webSlice(["10.0.1.3"]) });
    await t.clock.advance(2000);
    assert.match(t.nat(), /10\.0\.1\.3:8080/);
    assert.deepEqual(t.regularCollections, [0], "not again");
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() records the rules as applied before what follows them (the leftover removal)", async () => {
  const t = setup();
  try {
    await t.start(webSlice(["10.0.1.2"]));
    assert.match(t.nat(), /10\.0\.1\.2:8080/);
    assert.equal(t.updatedAtApplied.length, 1);
    assert.ok(t.updatedAtApplied[0]! > 0, "/healthz knew of the first sync when onApplied ran");
    assert.equal(t.updatedAtApplied[0], t.app.health.status().lastUpdated);
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() collects a sync's garbage before what follows the rules (the leftover removal)", async () => {
  const t = setup();
  try {
    t.heap.growthPerRestore = 64 * 1024 * 1024;
    await t.start(webSlice(["10.0.1.2"]));
    assert.match(t.nat(), /10\.0\.1\.2:8080/);
    // Before the first restore, then after it: the heap grew past the limit.
    assert.deepEqual(t.regularCollections, [0, 1]);
    assert.deepEqual(t.collectionsAtApplied, [2], "both ran before onApplied was called");
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() collects the lists' garbage while the start-up reads run, and theirs once they are done", async () => {
  let release = () => {};
  const reads = new Promise<void>((r) => release = r);
  const t = setup(2, undefined, (backend) => ({
    sync: (state) => backend.sync(state),
    rulesFlushed: () => backend.rulesFlushed(),
    prepareFirstSync: () => {
      backend.prepareFirstSync?.();
      return reads;
    },
  }));
  try {
    await t.start(webSlice(["10.0.1.2"]));
    await t.clock.advance(1000);
    // With iptables-nft the reads take the whole nat table: the lists' garbage goes first.
    assert.deepEqual(t.regularCollections, [0], "the lists are in, the reads still running");
    assert.doesNotMatch(t.nat(), /10\.0\.1\.2:8080/);
    release();
    await t.clock.advance(1000);
    assert.deepEqual(t.regularCollections, [0, 0], "then the reads' own, then the first restore");
    assert.match(t.nat(), /10\.0\.1\.2:8080/);
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() gives memory back 2 s after a relist that changed nothing", async () => {
  const t = setup();
  try {
    t.sink().onListed?.("Service");
    t.sink().onListed?.("EndpointSlice");
    await t.start(webSlice(["10.0.1.2"]));
    const synced = t.restores();
    await t.clock.advance(2000); // the first sync ran at START
    assert.deepEqual(t.collectedAt, [START + 2000], "2 s after the first sync");
    // A relist after a 410 that found every object unchanged: no event, so no sync.
    t.sink().onListed?.("Service"); // START + 3000
    await t.clock.advance(1999);
    assert.deepEqual(t.collectedAt, [START + 2000]);
    await t.clock.advance(1);
    assert.deepEqual(t.collectedAt, [START + 2000, START + 5000]);
    assert.equal(t.restores(), synced, "the relist synced nothing");
  } finally {
    await t.stop();
  }
});

Deno.test("createProxyApp() starts each backend's own loop with the app's signal", async () => {
  const signals: AbortSignal[] = [];
  const clock = new FakeClock({ startMs: 0 });
  const metrics = createProxyMetrics(new Registry());
  const app = createProxyApp({
    intake: createStateIntake({ nodeName: "node1", metrics, logger: silentLogger, clock }),
    createSource: () => ({ start: () => Promise.resolve() }),
    backends: [{
      family: "IPv4",
      metrics: NO_BACKEND_METRICS,
      backend: {
        sync: () => Promise.resolve({ full: true, counts: {} }),
        rulesFlushed: () => Promise.resolve(false),
        start: (signal) => signals.push(signal),
      },
    }],
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
    logger: silentLogger,
    metrics,
    clock,
  });
  const abort = new AbortController();
  const done = app.start(abort.signal);
  assert.equal(signals.length, 1);
  abort.abort();
  assert.ok(signals[0]?.aborted);
  await clock.advance(0);
  await done;
});
