import assert from "node:assert/strict";
import { Registry } from "../../lib/metrics/prom.ts";
import { createProxyHealth } from "../../lib/server/mod.ts";
import { createProxyMetrics } from "../../lib/metrics/mod.ts";
import { createHealthHandler, createMetricsHandler } from "../../lib/server/mod.ts";
import { splitBindAddress } from "../../lib/server/serve.ts";
import { FakeClock } from "../support/fake_clock.ts";

function setup(eligible = true) {
  const clock = new FakeClock({ startMs: 1_700_000_000_000 });
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  const health = createProxyHealth({ syncPeriodMs: 30_000, clock });
  const handler = createHealthHandler({ health, metrics, nodeEligible: () => eligible });
  return { clock, registry, metrics, health, handler };
}

Deno.test("createHealthHandler() answers 200 with upstream's body and headers while healthy", async () => {
  const t = setup();
  t.health.queued(t.clock.now());
  t.health.updated(t.clock.now());
  const res = t.handler(new Request("http://x/healthz"));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("Content-Type"), "application/json");
  assert.equal(res.headers.get("X-Content-Type-Options"), "nosniff");
  const body = await res.json();
  assert.equal(body.nodeEligible, true);
  assert.equal(body.lastUpdated, new Date(t.clock.now()).toISOString());
  assert.ok("currentTime" in body);
  assert.match(await t.registry.metrics(), /kubeproxy_proxy_healthz_total\{code="200"\} 1/);
});

Deno.test("createHealthHandler() answers 503 once a queued change waits longer than 2 x syncPeriod", async () => {
  const t = setup();
  t.health.queued(t.clock.now());
  await t.clock.advance(60_001);
  assert.equal(t.handler(new Request("http://x/healthz")).status, 503);
  assert.equal(t.handler(new Request("http://x/livez")).status, 503);
  t.health.updated(t.clock.now());
  assert.equal(t.handler(new Request("http://x/livez")).status, 200);
  assert.match(await t.registry.metrics(), /kubeproxy_proxy_livez_total\{code="503"\} 1/);
});

Deno.test("createHealthHandler() reports a node being deleted as not eligible on /healthz only", async () => {
  const t = setup(false);
  const res = t.handler(new Request("http://x/healthz"));
  assert.equal(res.status, 503);
  assert.equal((await res.json()).nodeEligible, false);
  const live = t.handler(new Request("http://x/livez"));
  assert.equal(live.status, 200);
  assert.ok(!("nodeEligible" in await live.json()));
});

Deno.test("createMetricsHandler() serves the registry and /proxyMode", async () => {
  const t = setup();
  const handler = createMetricsHandler(t.registry, "iptables");
  t.metrics.syncDuration.observe({ ip_family: "IPv4" }, 0.003);
  const metrics = await (await handler(new Request("http://x/metrics"))).text();
  assert.match(metrics, /# TYPE kubeproxy_sync_proxy_rules_duration_seconds histogram/);
  assert.match(
    metrics,
    /kubeproxy_sync_proxy_rules_duration_seconds_bucket\{le="0.001",ip_family="IPv4"\} 0/,
  );
  assert.match(
    metrics,
    /kubeproxy_sync_proxy_rules_duration_seconds_bucket\{le="0.004",ip_family="IPv4"\} 1/,
  );
  assert.match(metrics, /kubeproxy_sync_proxy_rules_duration_seconds_bucket\{le="16.384",/);
  assert.equal(await (await handler(new Request("http://x/proxyMode"))).text(), "iptables");
  assert.equal((await handler(new Request("http://x/other"))).status, 404);
});

Deno.test("splitBindAddress() reads host:port and [v6]:port and rejects the rest", () => {
  assert.deepEqual(splitBindAddress("0.0.0.0:10256"), { hostname: "0.0.0.0", port: 10256 });
  assert.deepEqual(splitBindAddress("[::1]:10249"), { hostname: "::1", port: 10249 });
  assert.throws(
    () => splitBindAddress("10256"),
    /Invalid bind address "10256": expected host:port/,
  );
});
