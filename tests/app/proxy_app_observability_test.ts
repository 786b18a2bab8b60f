/**
 * What operators see of the sync loop: per-family metrics, network programming latency from
 * the EndpointSlice trigger-time annotation, the sync log lines and the onApplied hook.
 */
import assert from "node:assert/strict";
import { Registry } from "prom-client";
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import { createIptablesBackends } from "../../lib/app/iptables_backends.ts";
import { createProxyApp } from "../../lib/app/proxy_app.ts";
import { defaultConfig } from "../../lib/config/mod.ts";
import { createLogger } from "../../lib/log/mod.ts";
import { createProxyMetrics } from "../../lib/metrics/mod.ts";
import type { ProxyState } from "../../lib/proxy/mod.ts";
import type { ObjectSink } from "../../lib/source/mod.ts";
import { createFakeIptables } from "../support/fake_iptables.ts";
import { FakeClock } from "../support/fake_clock.ts";

const START = 1_700_000_000_000;

const webService: V1Service = {
  metadata: { namespace: "demo", name: "web" },
  spec: {
    clusterIP: "172.30.0.10",
    clusterIPs: ["172.30.0.10"],
    ports: [{ name: "http", port: 80, protocol: "TCP" }],
  },
};

function webSlice(ips: string[], triggerTime?: number): V1EndpointSlice {
  return {
    metadata: {
      namespace: "demo",
      name: "web-1",
      labels: { "kubernetes.io/service-name": "web" },
      ...(triggerTime === undefined ? {} : {
        annotations: {
          "endpoints.kubernetes.io/last-change-trigger-time": new Date(triggerTime).toISOString(),
        },
      }),
    },
    addressType: "IPv4",
    ports: [{ name: "http", port: 8080, protocol: "TCP" }],
    endpoints: ips.map((ip) => ({
      addresses: [ip],
      conditions: { ready: true },
      nodeName: "node1",
    })),
  };
}

function setup(verbosity = 2) {
  const clock = new FakeClock({ startMs: START });
  const ipt = createFakeIptables();
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  const lines: string[] = [];
  const logger = createLogger({ verbosity, write: (l) => lines.push(l) });
  const applied: ProxyState[][] = [];
  let sink: ObjectSink | undefined;
  const app = createProxyApp({
    nodeName: "node1",
    fallbackNodeIPs: ["192.168.0.2"],
    createSource: (s) => {
      sink = s;
      return { start: () => Promise.resolve() };
    },
    backends: createIptablesBackends({
      config: { ...defaultConfig(), clusterCIDRs: ["10.0.0.0/8"] },
      flavour: "legacy",
      families: ["IPv4"],
      runner: ipt.run,
      logger,
      metrics: metrics.forFamily("IPv4"),
    }),
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
    logger,
    metrics,
    clock,
    onApplied: (states) => {
      applied.push([...states]);
      return Promise.resolve();
    },
  });
  const abort = new AbortController();
  const done = app.start(abort.signal);
  const stop = async () => {
    abort.abort();
    await clock.advance(0);
    await done;
  };
  const start = async (slice: V1EndpointSlice) => {
    sink!.onEvent({ kind: "Service", type: "ADDED", object: webService });
    sink!.onEvent({ kind: "EndpointSlice", type: "ADDED", object: slice });
    sink!.onSynced("Service");
    sink!.onSynced("EndpointSlice");
    await clock.advance(1000);
  };
  return { clock, ipt, registry, metrics, lines, applied, sink: () => sink!, start, stop };
}

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
