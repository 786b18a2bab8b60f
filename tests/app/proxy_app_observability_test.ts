/**
 * What operators see of the sync loop: per-family metrics, network programming latency from
 * the EndpointSlice trigger-time annotation, the sync log lines and the onApplied hook.
 */
import assert from "node:assert/strict";
import type { Registry } from "../../lib/metrics/prom.ts";
import { setupProxyApp as setup, START, webSlice } from "./proxy_app_fixtures.ts";

async function histogram(registry: Registry, name: string) {
  const text = await registry.metrics();
  const num = (suffix: string) => {
    const m = new RegExp(`^kubeproxy_${name}_${suffix}\\{ip_family="IPv4"\\} (\\S+)$`, "m")
      .exec(text);
    return m ? Number(m[1]) : 0;
  };
  return { count: num("count"), sum: num("sum"), text };
}

Deno.test("network_programming_duration_seconds measures from the slice's trigger time", async () => {
  const t = setup();
  try {
    // Changed before the proxy started: upstream does not report those.
    await t.start(webSlice(["10.0.1.2"], START - 60_000));
    assert.equal((await histogram(t.registry, "network_programming_duration_seconds")).count, 0);

    await t.clock.advance(10_000);
    const changedAt = t.clock.now() - 2_000; // The controller saw the pod change 2 s ago.
    t.sink().onEvent({
      kind: "EndpointSlice",
      type: "MODIFIED",
      object: webSlice(["10.0.1.3"], changedAt),
    });
    await t.clock.advance(0);
    const h = await histogram(t.registry, "network_programming_duration_seconds");
    assert.equal(h.count, 1);
    assert.equal(h.sum, (t.clock.now() - changedAt) / 1000);
    assert.equal(h.sum, 2, "the sync ran at once: 2 s after the change");
    assert.match(
      h.text,
      /network_programming_duration_seconds_bucket\{le="1",ip_family="IPv4"\} 0/,
    );
    assert.match(
      h.text,
      /network_programming_duration_seconds_bucket\{le="2",ip_family="IPv4"\} 1/,
    );
  } finally {
    await t.stop();
  }
});

Deno.test("sync metrics move per ip_family: counts, durations, rules and timestamps", async () => {
  const t = setup();
  try {
    await t.start(webSlice(["10.0.1.2"]));
    const text = await t.registry.metrics();
    assert.match(
      text,
      /kubeproxy_sync_full_proxy_rules_duration_seconds_count\{ip_family="IPv4"\} 1/,
    );
    assert.match(
      text,
      /kubeproxy_sync_proxy_rules_iptables_total\{ip_family="IPv4",table="nat"\} [1-9]/,
    );
    assert.match(
      text,
      /kubeproxy_sync_proxy_rules_iptables_last\{ip_family="IPv4",table="filter"\} [1-9]/,
    );
    assert.match(text, /kubeproxy_sync_proxy_rules_endpoint_changes_total 1/);
    assert.match(text, /kubeproxy_sync_proxy_rules_service_changes_total 1/);
    assert.match(
      text,
      new RegExp(
        `kubeproxy_sync_proxy_rules_last_timestamp_seconds\\{ip_family="IPv4"\\} ${START / 1000}`,
      ),
    );

    t.sink().onEvent({ kind: "EndpointSlice", type: "MODIFIED", object: webSlice(["10.0.1.3"]) });
    await t.clock.advance(1000);
    const after = await t.registry.metrics();
    assert.match(
      after,
      /kubeproxy_sync_partial_proxy_rules_duration_seconds_count\{ip_family="IPv4"\} 1/,
    );
    // The partial sync rewrote the endpoint's chains only: the filter table did not change.
    assert.match(after, /_iptables_last\{ip_family="IPv4",table="nat"\} [1-9]/);
    assert.match(after, /_iptables_last\{ip_family="IPv4",table="filter"\} 0$/m);
    assert.match(after, /kubeproxy_sync_proxy_rules_endpoint_changes_total 2/);
  } finally {
    await t.stop();
  }
});

Deno.test("every sync logs its kind, duration and counts at -v=2, not below", async () => {
  const t = setup(2);
  const quiet = setup(1);
  try {
    await t.start(webSlice(["10.0.1.2"]));
    await quiet.start(webSlice(["10.0.1.2"]));
    const synced = t.lines.find((l) => l.includes('"Synced proxy rules"'));
    assert.ok(synced, t.lines.join("\n"));
    assert.match(synced, /kind="full"/);
    assert.match(synced, /elapsed="\d+\.\d{3}s"/);
    assert.match(synced, /services=1 endpoints=1/);
    assert.match(synced, /rules=\{"nat":\d+,"filter":\d+\}/);
    assert.ok(!quiet.lines.some((l) => l.includes("Synced proxy rules")));
  } finally {
    await t.stop();
    await quiet.stop();
  }
});

Deno.test("a failed apply logs the command and its stderr at level 0", async () => {
  const t = setup(0);
  try {
    await t.start(webSlice(["10.0.1.2"]));
    t.ipt.failNextRestore("iptables-restore: line 7 failed");
    t.sink().onEvent({ kind: "EndpointSlice", type: "MODIFIED", object: webSlice(["10.0.1.3"]) });
    await t.clock.advance(1000);
    const failed = t.lines.find((l) => l.includes('"Failed to apply proxy rules"'));
    assert.ok(failed, t.lines.join("\n"));
    assert.match(failed, /^E/);
    assert.match(failed, /iptables-legacy-restore -w .*--noflush --counters/);
    assert.match(failed, /line 7 failed/);
    assert.match(
      await t.registry.metrics(),
      /kubeproxy_sync_proxy_rules_iptables_restore_failures_total\{ip_family="IPv4"\} 1/,
    );
  } finally {
    await t.stop();
  }
});

Deno.test("onApplied gets the last applied snapshot after every sync", async () => {
  const t = setup();
  try {
    await t.start(webSlice(["10.0.1.2"]));
    assert.equal(t.applied.length, 1);
    const state = t.applied[0]![0]!;
    assert.equal(state.family, "IPv4");
    assert.deepEqual([...state.services.values()][0]!.allEndpoints.map((e) => e.ip), ["10.0.1.2"]);
  } finally {
    await t.stop();
  }
});
