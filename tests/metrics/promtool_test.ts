/**
 * IPVS mode's registry, linted in-process by `promtool check metrics` (iptables and nftables
 * modes are linted on the real program's first scrape in tests/e2e/metrics_servers_test.ts).
 */
import assert from "node:assert/strict";
import { Registry } from "../../lib/metrics/prom.ts";
import { createProxyMetrics, registerProcessMetrics } from "../../lib/metrics/mod.ts";
import { ipvsMode } from "../../lib/backends/ipvs/mode.ts";
import { promtoolProblems } from "../support/promtool.ts";

Deno.test("IPVS mode's metrics pass promtool check metrics but for upstream's _total gauges", async () => {
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  metrics.primeFamilies(["IPv4", "IPv6"]);
  const forFamily = ipvsMode.registerMetrics(registry, {});
  forFamily("IPv4");
  forFamily("IPv6");
  registerProcessMetrics(registry);
  const text = await registry.metrics();
  assert.match(text, /kubeproxy_sync_proxy_rules_iptables_restore_failures_total/);
  assert.deepEqual(await promtoolProblems(text), []);
});
