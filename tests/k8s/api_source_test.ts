/**
 * The API source against the in-process test API server (real TLS, real HTTP): initial paged
 * list, watch events, and every fault of the issue survived without spurious events.
 */
import assert from "node:assert/strict";
import { NO_RIGHTS_TOKEN, type TestApiServer } from "../support/api_server/mod.ts";
import { node, pause, service, waitFor, withApiSource } from "./api_support.ts";

const SLICE = {
  apiVersion: "discovery.k8s.io/v1",
  kind: "EndpointSlice",
  metadata: {
    name: "web-abc",
    namespace: "ns",
    labels: { "kubernetes.io/service-name": "web" },
  },
  addressType: "IPv4",
  endpoints: [{ addresses: ["10.0.1.1"], conditions: { ready: true } }],
  ports: [{ name: "http", port: 8080, protocol: "TCP" }],
};

const BASE = [
  service("web", "172.30.0.10"),
  service("api", "172.30.0.11"),
  service("db", "172.30.0.12"),
  service("other-proxy", "172.30.0.13", { "service.kubernetes.io/service-proxy-name": "x" }),
  service("headless-ish", "172.30.0.14", { "service.kubernetes.io/headless": "" }),
  SLICE,
  node("node-1", "192.168.0.2", { "topology.kubernetes.io/zone": "a" }),
  node("node-2", "192.168.0.3"),
  {
    apiVersion: "networking.k8s.io/v1",
    kind: "ServiceCIDR",
    metadata: { name: "kubernetes" },
    spec: { cidrs: ["172.30.0.0/16"] },
  },
];

const ALL_SYNCED = (s: { synced: Set<string> }) => s.synced.size === 4;

/** The query of each list request for `resource`, as "resourceVersion limit continue?" strings. */
function listQueries(server: TestApiServer, resource: string): string[] {
  return server.requests({ verb: "list", resource }).map((r) => {
    const q = new URL(r.url, "x:/").searchParams;
    return `rv=${q.get("resourceVersion") ?? "-"} limit=${q.get("limit") ?? "-"}` +
      `${q.has("continue") ? " continue" : ""} ${r.status}`;
  });
}

Deno.test("API source lists first with resourceVersion=0, answered whole by a watch-cache server", async () => {
  await withApiSource({ objects: BASE, pageSize: 2 }, async ({ server, sink }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    assert.deepEqual(sink.keys("Service"), ["ns/api", "ns/db", "ns/web"]);
    assert.deepEqual(listQueries(server, "services"), ["rv=0 limit=2 200"]);
  });
});

Deno.test("API source follows continue tokens when the server pages, and relists after 410", async () => {
  const opts = { objects: BASE, pageSize: 2, server: { pageWatchCacheLists: true } };
  await withApiSource(opts, async ({ server, sink, stats }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    assert.deepEqual(sink.keys("Service"), ["ns/api", "ns/db", "ns/web"]);
    assert.deepEqual(listQueries(server, "services"), [
      "rv=0 limit=2 200",
      "rv=- limit=2 continue 200",
    ]);
    await server.waitForWatches(undefined, 4);
    const mark = sink.events.length;
    server.expireHistory();
    server.cutStreams();
    await waitFor("relist", () => stats().Service.lists === 2);
    await pause(200);
    assert.deepEqual(sink.since(mark), [], "an unchanged relist touches nothing");
    // A server that paged before is asked in pages again; the exact read of the compacted
    // revision is gone, so the reflector falls back to a consistent (rv="") list, as client-go.
    assert.deepEqual(
      listQueries(server, "services").slice(2).map((q) => q.replace(/rv=\d+/, "rv=N")),
      [
        "rv=N limit=2 410",
        "rv=- limit=2 200",
        "rv=- limit=2 continue 200",
      ],
    );
  });
});

Deno.test("API source lists in pages with upstream's selectors, then delivers watch events", async () => {
  const opts = { objects: BASE, pageSize: 2, server: { pageWatchCacheLists: true } };
  await withApiSource(opts, async ({ server, sink }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    assert.deepEqual(sink.keys("Service"), ["ns/api", "ns/db", "ns/web"]);
    assert.deepEqual(sink.keys("EndpointSlice"), ["ns/web-abc"]);
    assert.deepEqual(sink.keys("Node"), ["node-1"]);
    assert.deepEqual(sink.keys("ServiceCIDR"), ["kubernetes"]);
    assert.ok(server.count({ verb: "list", resource: "services" }) >= 2, "paged list");
    await server.waitForWatches(undefined, 4);
    const watch = new URL(server.requests({ verb: "watch", resource: "services" })[0]!.url, "x:/");
    assert.equal(watch.searchParams.get("allowWatchBookmarks"), "true");
    const timeout = Number(watch.searchParams.get("timeoutSeconds"));
    assert.ok(timeout >= 300 && timeout < 600, `timeoutSeconds ${timeout}`);
    assert.equal(
      watch.searchParams.get("labelSelector"),
      "!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless",
    );
    const nodeWatch = new URL(server.requests({ verb: "watch", resource: "nodes" })[0]!.url, "x:/");
    assert.equal(nodeWatch.searchParams.get("fieldSelector"), "metadata.name=node-1");

    const mark = sink.events.length;
    server.create(service("new", "172.30.0.20"));
    const web = server.store.get("Service", "ns", "web");
    server.update({ ...web, spec: { ...web.spec, ports: [{ ...web.spec.ports[0], port: 81 }] } });
    server.delete("Service", "ns", "db");
    server.update({
      ...server.store.get("Node", undefined, "node-2"),
      metadata: { name: "node-2", labels: { x: "y" } },
    });
    await waitFor("three service events", () => sink.events.length >= mark + 3);
    await pause(100);
    assert.deepEqual(sink.since(mark), [
      "ADDED Service ns/new",
      "MODIFIED Service ns/web",
      "DELETED Service ns/db",
    ]);
    assert.equal(server.events().filter((e) => e.reason === "Starting").length, 1);
  });
});

Deno.test("API source authenticates with a client certificate", async () => {
  await withApiSource({ objects: BASE, auth: "certificate" }, async ({ server, sink }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    const users = new Set(server.requests({ verb: "list" }).map((r) => r.user));
    assert.deepEqual([...users], ["system:kube-proxy"]);
  });
});

Deno.test("API source resumes a cut watch from the last resourceVersion without relisting", async () => {
  await withApiSource({ objects: BASE }, async ({ server, sink, stats }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches("services");
    server.create(service("before-cut", "172.30.0.21"));
    await waitFor("before-cut", () => sink.keys("Service").includes("ns/before-cut"));
    const rv = server.store.get("Service", "ns", "before-cut").metadata.resourceVersion;
    const mark = sink.events.length;
    const watchesBefore = server.count({ verb: "watch", resource: "services" });
    assert.ok(server.cutStreams() >= 3);
    server.create(service("after-cut", "172.30.0.22"));
    await waitFor("after-cut", () => sink.keys("Service").includes("ns/after-cut"));
    const rewatch = server.requests({ verb: "watch", resource: "services" })[watchesBefore]!;
    assert.equal(new URL(rewatch.url, "x:/").searchParams.get("resourceVersion"), rv);
    assert.equal(stats().Service.lists, 1);
    assert.deepEqual(sink.since(mark), ["ADDED Service ns/after-cut"]);
  });
});

Deno.test("API source drops a stalled watch after the idle timeout and catches up", async () => {
  await withApiSource({ objects: BASE, idleTimeoutMs: 600 }, async ({ server, sink, stats }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches(undefined, 4);
    server.stallStreams();
    server.create(service("during-stall", "172.30.0.23"));
    await waitFor("during-stall", () => sink.keys("Service").includes("ns/during-stall"), 5000);
    assert.ok(stats().Service.idleTimeouts >= 1);
    assert.equal(stats().Service.lists, 1);
  });
});

Deno.test("API source keeps a quiet watch alive through bookmarks", async () => {
  const server = { bookmarkIntervalMs: 150 };
  await withApiSource({ objects: BASE, idleTimeoutMs: 600, server }, async ({ sink, stats }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await pause(1500);
    assert.equal(stats().Service.idleTimeouts, 0);
    assert.equal(stats().Service.watches, 1);
  });
});

Deno.test("API source relists after 410 and emits only the real differences", async () => {
  await withApiSource({ objects: BASE }, async ({ server, sink, stats }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches(undefined, 4);
    // Nothing changed: a relist must produce no event at all.
    let mark = sink.events.length;
    server.expireHistory();
    server.cutStreams();
    await waitFor("relist", () => stats().Service.lists === 2 && stats().EndpointSlice.lists === 2);
    await server.waitForWatches(undefined, 4);
    await pause(200);
    assert.deepEqual(sink.since(mark), []);
    assert.ok(stats().Service.expired >= 1);
    // ... but it is reported, so that the memory it took can be given back.
    assert.equal(sink.listed.get("Service"), 2);
    assert.equal(sink.listed.get("EndpointSlice"), 2);
    // Changes made while the client was away and the history was lost: exactly those.
    mark = sink.events.length;
    await server.stop();
    const api = server.store.get("Service", "ns", "api");
    server.update({ ...api, spec: { ...api.spec, ports: [{ ...api.spec.ports[0], port: 90 }] } });
    server.delete("Service", "ns", "db");
    server.create(service("fresh", "172.30.0.24"));
    server.expireHistory();
    await server.start();
    await waitFor("catch-up", () => sink.events.length >= mark + 3);
    await pause(200);
    assert.deepEqual(sink.since(mark), [
      "MODIFIED Service ns/api",
      "ADDED Service ns/fresh",
      "DELETED Service ns/db",
    ]);
  });
});

Deno.test("API source backs off exponentially on 500s, then recovers", async () => {
  await withApiSource({ objects: BASE }, async ({ server, sink, logs }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches("services");
    server.failNext(4, 500, { match: { verb: "watch", resource: "services" } });
    server.cutStreams();
    server.create(service("after-500", "172.30.0.25"));
    await waitFor("after-500", () => sink.keys("Service").includes("ns/after-500"), 10_000);
    const failed = server.requests({ verb: "watch", resource: "services", status: 500 });
    assert.equal(failed.length, 4);
    const gaps = failed.slice(1).map((r, i) => r.time - failed[i]!.time);
    // Backoff 100 ms doubling, no jitter in tests: the cut watch took the 100 ms step, so the
    // failures are 200, 400 and 800 ms apart (timer slack allowed).
    for (const [i, min] of [200, 400, 800].entries()) {
      assert.ok(gaps[i]! >= min - 5 && gaps[i]! < min + 400, `gap ${i}: ${gaps.join(",")}`);
    }
    assert.ok(logs.some((l) => l.includes("Watch of Services failed; retrying")));
  });
});

Deno.test("API source waits as long as a 429's Retry-After says", async () => {
  await withApiSource({ objects: BASE }, async ({ server, sink }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches("services");
    server.failNext(1, 429, {
      retryAfterSeconds: 2,
      match: { verb: "watch", resource: "services" },
    });
    server.cutStreams();
    await server.waitForRequests({ verb: "watch", resource: "services", status: 429 });
    const throttled = server.requests({ verb: "watch", resource: "services", status: 429 })[0]!;
    await server.waitForRequests({ verb: "watch", resource: "services", status: 200 }, 2, 5000);
    const next = server.requests({ verb: "watch", resource: "services" })
      .find((r) => r.time > throttled.time)!;
    const waited = next.time - throttled.time;
    assert.ok(waited >= 1990 && waited < 3000, `waited ${waited} ms after Retry-After: 2`);
  });
});

Deno.test("API source counts a malformed line and rewatches from the last resourceVersion", async () => {
  await withApiSource({ objects: BASE }, async ({ server, sink, stats, logs }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches(undefined, 4);
    const mark = sink.events.length;
    assert.ok(server.sendMalformedLine() >= 3);
    await waitFor("malformed counted", () => stats().Service.malformedLines === 1);
    server.create(service("after-bad-line", "172.30.0.26"));
    await waitFor("after-bad-line", () => sink.keys("Service").includes("ns/after-bad-line"));
    assert.equal(stats().Service.lists, 1);
    assert.deepEqual(sink.since(mark), ["ADDED Service ns/after-bad-line"]);
    assert.ok(logs.some((l) => l.includes("Malformed watch event")));
  });
});

Deno.test("API source survives a restart with a new resourceVersion history", async () => {
  await withApiSource({ objects: BASE }, async ({ server, sink, stats }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches(undefined, 4);
    const mark = sink.events.length;
    await server.restart({ newHistory: true });
    await waitFor("relist", () => stats().Service.lists === 2, 10_000);
    await server.waitForWatches(undefined, 4);
    assert.deepEqual(sink.since(mark), []);
    server.create(service("after-restart", "172.30.0.27"));
    await waitFor("after-restart", () => sink.keys("Service").includes("ns/after-restart"));
    assert.deepEqual(sink.since(mark), ["ADDED Service ns/after-restart"]);
  });
});

Deno.test("API source retries an API server that is down at start until it is up", async () => {
  const opts = { objects: [], server: { startStopped: true } };
  await withApiSource(opts, async ({ server, sink, logs }) => {
    await pause(800);
    assert.equal(sink.synced.size, 0);
    assert.ok(logs.some((l) => l.includes("Cannot list Services; retrying")));
    for (const o of BASE) server.create(o);
    await server.start();
    await waitFor("sync after start", () => ALL_SYNCED(sink), 5000);
    assert.deepEqual(sink.keys("Service"), ["ns/api", "ns/db", "ns/web"]);
  });
});

Deno.test("API source with a wrong token logs a clear error and keeps retrying", async () => {
  await withApiSource(
    { objects: BASE, auth: { token: "wrong" } },
    async ({ server, sink, logs }) => {
      await server.waitForRequests({ verb: "list", resource: "services", status: 401 }, 3, 5000);
      assert.equal(sink.synced.size, 0);
      assert.ok(
        logs.some((l) =>
          l.includes("Cannot list Services; retrying") && l.includes("401 Unauthorized")
        ),
        logs.join("\n"),
      );
    },
  );
  await withApiSource(
    { objects: BASE, auth: { token: NO_RIGHTS_TOKEN } },
    async ({ server, logs }) => {
      await server.waitForRequests({ verb: "list", resource: "services", status: 403 }, 2, 5000);
      assert.ok(logs.some((l) => l.includes("403 Forbidden")));
    },
  );
});

Deno.test("API source goes on without ServiceCIDRs when the server answers 404 for them", async () => {
  const beforeStart = (server: TestApiServer) =>
    server.failNext(1, 404, { match: { verb: "list", resource: "servicecidrs" } });
  await withApiSource({ objects: BASE, beforeStart }, async ({ server, sink, logs }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    await server.waitForWatches(undefined, 3);
    await pause(300);
    assert.deepEqual(sink.keys("ServiceCIDR"), []);
    assert.equal(server.count({ resource: "servicecidrs" }), 1, "asked once, never again");
    const warned = logs.filter((l) => l.includes("does not serve ServiceCIDRs"));
    assert.equal(warned.length, 1, logs.join("\n"));
  });
});

Deno.test("API source goes on without ServiceCIDRs when RBAC forbids them (403)", async () => {
  const beforeStart = (server: TestApiServer) =>
    server.failNext(1, 403, { match: { verb: "list", resource: "servicecidrs" } });
  await withApiSource({ objects: BASE, beforeStart }, async ({ server, sink }) => {
    await waitFor("initial sync", () => ALL_SYNCED(sink));
    assert.deepEqual(sink.keys("Service"), ["ns/api", "ns/db", "ns/web"]);
    assert.equal(server.count({ verb: "watch", resource: "servicecidrs" }), 0);
  });
});
