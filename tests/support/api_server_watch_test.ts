/** Tests of the test API server's watch protocol and fault injection, over real TLS. */
import assert from "node:assert/strict";
import { openWatch as watch } from "./api_server/mod.ts";
import { apiCall as call } from "./api_server/mod.ts";
import { node, svc, withServer } from "./api_server/test_fixtures.ts";

Deno.test("watch: replays changes after a resourceVersion, selector transitions, RV 0 sends the state", async () => {
  await withServer(async (s) => {
    s.create(svc("a"));
    const rv = s.store.resourceVersion;
    s.create(svc("b"));
    s.update({ ...svc("a", { x: "1" }) });
    s.delete("Service", "default", "b");
    s.create(node("node1"));
    const w = await watch(s, `/api/v1/services?watch=1&resourceVersion=${rv}&labelSelector=!y`);
    try {
      const got: string[] = [];
      for (let i = 0; i < 3; i++) {
        const ev = await w.next();
        got.push(`${ev.type} ${ev.object.metadata.name} ${ev.object.kind}`);
      }
      assert.deepEqual(got, ["ADDED b Service", "MODIFIED a Service", "DELETED b Service"]);
      s.update(svc("a", { y: "1" }));
      const gone = await w.next();
      assert.deepEqual([gone.type, gone.object.metadata.name], ["DELETED", "a"]);
      s.update(svc("a"));
      const back = await w.next();
      assert.deepEqual([back.type, back.object.metadata.name], ["ADDED", "a"]);
      assert.equal(back.object.metadata.resourceVersion, s.store.resourceVersion);
    } finally {
      w.close();
    }
    const w0 = await watch(s, "/api/v1/nodes?watch=true&resourceVersion=0");
    try {
      const ev = await w0.next();
      assert.deepEqual([ev.type, ev.object.metadata.name, ev.object.apiVersion], [
        "ADDED",
        "node1",
        "v1",
      ]);
    } finally {
      w0.close();
    }
  });
});

Deno.test("watch: a resourceVersion older than the history gets ERROR 410 Expired", async () => {
  await withServer(async (s) => {
    s.create(svc("a"));
    const rv = s.store.resourceVersion;
    s.expireHistory();
    const w = await watch(s, `/api/v1/services?watch=1&resourceVersion=${rv}`);
    try {
      const ev = await w.next();
      assert.equal(ev.type, "ERROR");
      assert.deepEqual([ev.object.code, ev.object.reason], [410, "Expired"]);
      assert.match(ev.object.message, /too old resource version/);
      assert.equal(await w.next(), "END");
    } finally {
      w.close();
    }
  }, { historyLimit: 1000 });
  await withServer(async (s) => {
    s.create(svc("a"));
    const rv = s.store.resourceVersion;
    for (const n of ["b", "c", "d"]) s.create(svc(n));
    const w = await watch(s, `/api/v1/services?watch=1&resourceVersion=${rv}`);
    try {
      assert.equal(
        (await w.next()).object.code,
        410,
        "history limit 2 dropped the change after rv",
      );
    } finally {
      w.close();
    }
  }, { historyLimit: 2 });
});

Deno.test("watch: bookmarks only when asked, at the configured interval; timeoutSeconds ends the stream", async () => {
  await withServer(async (s) => {
    s.create(svc("a"));
    const rv = s.store.resourceVersion;
    const w = await watch(
      s,
      `/api/v1/services?watch=1&resourceVersion=${rv}&allowWatchBookmarks=true&timeoutSeconds=1`,
    );
    const plain = await watch(s, `/api/v1/services?watch=1&resourceVersion=${rv}`);
    try {
      const bm = await w.next();
      assert.equal(bm.type, "BOOKMARK");
      assert.deepEqual(bm.object.metadata, { resourceVersion: rv });
      assert.equal(await plain.next(300), undefined);
      const started = Date.now();
      let last;
      do last = await w.next(); while (typeof last === "object");
      assert.equal(last, "END");
      assert.ok(Date.now() - started < 1500);
    } finally {
      w.close();
      plain.close();
    }
  }, { bookmarkIntervalMs: 100 });
});

Deno.test("faults: failNext 500 and 429 with Retry-After, then normal answers; counters", async () => {
  await withServer(async (s) => {
    s.failNext(1, 500, { match: { verb: "list", resource: "services" } });
    s.failNext(2, 429, { retryAfterSeconds: 3, match: { resource: "nodes" } });
    assert.equal((await call(s, "/api/v1/nodes/x")).status, 429);
    const r429 = await call(s, "/api/v1/nodes");
    assert.equal(r429.status, 429);
    assert.equal(r429.headers.get("retry-after"), "3");
    assert.equal(r429.json.details.retryAfterSeconds, 3);
    assert.equal((await call(s, "/api/v1/nodes")).status, 200);
    assert.equal((await call(s, "/api/v1/services")).status, 500);
    assert.equal((await call(s, "/api/v1/services")).status, 200);
    assert.equal(s.count({ verb: "list", resource: "services" }), 2);
    assert.equal(s.count({ resource: "nodes", status: 429 }), 2);
  });
});

Deno.test("faults: hangNext leaves matching requests unanswered until the server stops", async () => {
  await withServer(async (s) => {
    s.hangNext(1, { verb: "list", resource: "services" });
    const hung = call(s, "/api/v1/services");
    const late = await Promise.race([
      hung.then(() => "answered", () => "failed"),
      new Promise((r) => setTimeout(() => r("pending"), 300)),
    ]);
    assert.equal(late, "pending");
    assert.equal((await call(s, "/api/v1/services")).status, 200, "only one request hangs");
    await s.stop();
    await assert.rejects(hung);
  });
});

Deno.test("faults: cut, stall and malformed lines on open watches", async () => {
  await withServer(async (s) => {
    const w1 = await watch(s, "/api/v1/services?watch=1&resourceVersion=0");
    await s.waitForWatches("services", 1);
    s.sendMalformedLine();
    assert.match(await w1.next(), /^MALFORMED:/);
    assert.equal(s.cutStreams(), 1);
    assert.match(await w1.next(), /^ERROR:/, "a cut stream errors instead of ending cleanly");
    w1.close();
    assert.equal(s.openWatches(), 0);

    const w2 = await watch(s, "/api/v1/services?watch=1&resourceVersion=0&allowWatchBookmarks=1");
    try {
      await s.waitForWatches("services", 1);
      s.stallStreams();
      s.create(svc("a"));
      assert.equal(await w2.next(400), undefined, "a stalled stream sends nothing");
      assert.equal(s.openWatches("services"), 1, "and stays open");
      const w3 = await watch(s, "/api/v1/services?watch=1&resourceVersion=0");
      assert.equal((await w3.next()).object.metadata.name, "a", "new watches work normally");
      w3.close();
    } finally {
      w2.close();
    }
  }, { bookmarkIntervalMs: 50 });
});

Deno.test("faults: restart with new history gives 410 for old RVs; stop/start keeps the port", async () => {
  await withServer(async (s) => {
    s.create(svc("a"));
    const oldRv = Number(s.store.resourceVersion);
    const w = await watch(s, `/api/v1/services?watch=1&resourceVersion=${oldRv}`);
    const port = s.port;
    await s.restart({ newHistory: true });
    assert.match(await w.next(), /^(ERROR:|END)/);
    w.close();
    assert.equal(s.port, port);
    const list = await call(s, "/api/v1/services");
    assert.ok(Number(list.json.metadata.resourceVersion) > oldRv);
    const w2 = await watch(s, `/api/v1/services?watch=1&resourceVersion=${oldRv}`);
    assert.equal((await w2.next()).object.code, 410);
    w2.close();
    await s.stop();
    await assert.rejects(call(s, "/api/v1/services"));
    await s.start();
    assert.equal((await call(s, "/api/v1/services")).status, 200);
  });
});
