/**
 * The proxy app on a fake iptables and a fake clock, fed by hand the way a source would, plus
 * the one service (`demo/web`, 172.30.0.10:80 -> 8080) the lib/app tests program.
 */
import { MODE_CONFIG_SECTIONS, type ProxyBackend } from "../../lib/backends/mod.ts";
import { Registry } from "../../lib/metrics/prom.ts";
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import { createProxyApp } from "../../lib/app/proxy_app.ts";
import { createStateIntake } from "../../lib/app/state_intake.ts";
import { createIptablesProxier } from "../../lib/backends/iptables/proxier.ts";
import { iptablesRenderOptions } from "../../lib/backends/iptables/render_options.ts";
import { defaultConfig } from "../../lib/config/mod.ts";
import { createLogger } from "../../lib/log/mod.ts";
import { createProxyMetrics } from "../../lib/metrics/mod.ts";
import { iptablesMode } from "../../lib/backends/iptables/mode.ts";
import type { IPFamily, ProxyState } from "../../lib/proxy/mod.ts";
import type { ObjectSink } from "../../lib/source/mod.ts";
import { createFakeIptables } from "../support/fake_iptables.ts";
import { FakeClock } from "../support/fake_clock.ts";

/** The fake clock's start, in ms since the epoch. */
export const START = 1_700_000_000_000;

/** `demo/web`: clusterIP 172.30.0.10, TCP port "http" 80. */
export const webService: V1Service = {
  metadata: { namespace: "demo", name: "web" },
  spec: {
    clusterIP: "172.30.0.10",
    clusterIPs: ["172.30.0.10"],
    ports: [{ name: "http", port: 80, protocol: "TCP" }],
  },
};

/** `demo/web-1`: ready endpoints on node1 at `ips`, port 8080; with a trigger time if given. */
export function webSlice(ips: string[], triggerTime?: number): V1EndpointSlice {
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

/**
 * Starts the app (IPv4 unless `families` says more, legacy, min sync 1 s, sync 30 s) logging at
 * `verbosity` into `lines`.
 * While `broken.on`, every restore fails the way a kernel refusing the payload does.
 */
export function setupProxyApp(
  verbosity = 2,
  syncAfter?: Promise<void>,
  wrapBackend: (backend: ProxyBackend) => ProxyBackend = (b) => b,
  families: readonly IPFamily[] = ["IPv4"],
) {
  const clock = new FakeClock({ startMs: START });
  const ipt = createFakeIptables();
  const registry = new Registry();
  const metrics = createProxyMetrics(registry);
  const familyMetrics = iptablesMode.registerMetrics(registry, {});
  const lines: string[] = [];
  const logger = createLogger({ verbosity, write: (l) => lines.push(l) });
  const applied: ProxyState[][] = [];
  const broken = { on: false };
  /** How many restores (of any family) have run so far. */
  const restores = () => ipt.calls.filter((c) => c.cmd.endsWith("-restore")).length;
  const runner: typeof ipt.run = (input) => {
    if (!input.cmd.endsWith("-restore")) return ipt.run(input);
    heap.used += heap.growthPerRestore;
    return broken.on
      ? Promise.resolve({ code: 1, stdout: "", stderr: "iptables-restore: line 3 failed\n" })
      : ipt.run(input);
  };
  let sink: ObjectSink | undefined;
  /** Restores run when each regular collection (before the first sync, or after one) ran. */
  const regularCollections: number[] = [];
  /** V8's heap in use as the reclaimer reads it; each restore adds `growthPerRestore`. */
  const heap = { used: 0, growthPerRestore: 0 };
  /** How many regular collections had run when onApplied was called, per call. */
  const collectionsAtApplied: number[] = [];
  /** The health state's last apply time when onApplied was called, per call. */
  const updatedAtApplied: number[] = [];
  /** Clock times of the quiet-time collections. */
  const collectedAt: number[] = [];
  const app = createProxyApp({
    intake: createStateIntake({
      nodeName: "node1",
      fallbackNodeIPs: ["192.168.0.2"],
      metrics,
      logger,
      clock,
    }),
    createSource: (s) => {
      sink = s;
      return { start: () => Promise.resolve() };
    },
    backends: families.map((family) => {
      const familyMetric = familyMetrics(family);
      return {
        family,
        metrics: familyMetric,
        backend: wrapBackend(createIptablesProxier({
          ...iptablesRenderOptions({
            ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
            clusterCIDRs: family === "IPv4" ? ["10.0.0.0/8"] : ["fd00:10::/64"],
          }, family),
          family,
          flavour: "legacy",
          runner,
          logger,
          metrics: familyMetric,
        })),
      };
    }),
    minSyncPeriodMs: 1000,
    syncPeriodMs: 30_000,
    logger,
    metrics,
    clock,
    ...(syncAfter ? { syncAfter } : {}),
    memory: {
      collect: () => collectedAt.push(clock.now()),
      collectRegular: () => regularCollections.push(restores()),
      heapUsed: () => heap.used,
    },
    onApplied: (states) => {
      applied.push([...states]);
      collectionsAtApplied.push(regularCollections.length);
      updatedAtApplied.push(app.health.status().lastUpdated);
      return Promise.resolve();
    },
  });
  const abort = new AbortController();
  const done = app.start(abort.signal);
  const nat = () => ipt.save("legacy", "IPv4", "nat");
  const stop = async () => {
    abort.abort();
    await clock.advance(0);
    await done;
  };
  /** Lists webService and `slice`, marks both kinds synced and lets the first sync run. */
  const start = async (slice: V1EndpointSlice) => {
    sink!.onEvent({ kind: "Service", type: "ADDED", object: webService });
    sink!.onEvent({ kind: "EndpointSlice", type: "ADDED", object: slice });
    sink!.onSynced("Service");
    sink!.onSynced("EndpointSlice");
    await clock.advance(1000);
  };
  /** A metric by its name without the `kubeproxy_` prefix (core or iptables mode's own). */
  const metric = (name: string) => {
    const m = registry.getSingleMetric(`kubeproxy_${name}`);
    if (!m) throw new Error(`No metric kubeproxy_${name}`);
    return m;
  };
  return {
    app,
    broken,
    metric,
    clock,
    ipt,
    registry,
    metrics,
    lines,
    applied,
    regularCollections,
    collectionsAtApplied,
    updatedAtApplied,
    heap,
    collectedAt,
    restores,
    sink: () => sink!,
    nat,
    start,
    stop,
  };
}
