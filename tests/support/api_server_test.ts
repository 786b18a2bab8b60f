/**
 * Tests of the test API server itself, over real TLS with fetch (and client-node for the
 * kubeconfig), so client tests can trust what it says about the protocol.
 */
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import {
  ADMIN_TOKEN,
  createTestPki,
  exposeInNamespace,
  KUBE_PROXY_TOKEN,
  KUBE_PROXY_USER,
  NO_RIGHTS_TOKEN,
  startTestApiServer,
  type TestApiServer,
  type TestPki,
  writeKubeconfig,
} from "./api_server/mod.ts";

const pki: TestPki = await createTestPki();
const DIR = "/tmp/deno-kube-proxy/ap-test";

// deno-lint-ignore no-explicit-any
type Json = any;

interface CallOptions {
  readonly token?: string | null;
  readonly method?: string;
  readonly body?: unknown;
  readonly cert?: { cert: string; key: string };
}

async function call(s: TestApiServer, path: string, opts: CallOptions = {}) {
  const client = Deno.createHttpClient({
    caCerts: [pki.caCert],
    ...(opts.cert ? { cert: opts.cert.cert, key: opts.cert.key } : {}),
  });
  try {
    const token = opts.token === undefined ? KUBE_PROXY_TOKEN : opts.token;
    const res = await fetch(`${s.url}${path}`, {
      client,
      method: opts.method ?? "GET",
      headers: {
        ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
        ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    const text = await res.text();
    let json: Json;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, headers: res.headers, json };
  } finally {
    client.close();
  }
}

/** An open watch read line by line. */
interface OpenWatch {
  /** The next event, or undefined if none arrives within `ms`; "END"/"ERROR:..." at stream end. */
  next(ms?: number): Promise<Json | string | undefined>;
  close(): void;
}

async function watch(s: TestApiServer, path: string): Promise<OpenWatch> {
  const client = Deno.createHttpClient({ caCerts: [pki.caCert] });
  const ac = new AbortController();
  const res = await fetch(`${s.url}${path}`, {
    client,
    signal: ac.signal,
    headers: { authorization: `Bearer ${KUBE_PROXY_TOKEN}` },
  });
  assert.equal(res.status, 200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let pending: Promise<ReadableStreamReadResult<string>> | undefined;
  const next = async (ms = 2000): Promise<Json | string | undefined> => {
    for (;;) {
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          return JSON.parse(line);
        } catch {
          return `MALFORMED:${line}`;
        }
      }
      pending ??= reader.read();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const r = await Promise.race([
        pending.then((v) => v, (e) => ({ error: String(e) })),
        new Promise<"timeout">((res) => timer = setTimeout(() => res("timeout"), ms)),
      ]);
      clearTimeout(timer);
      if (r === "timeout") return undefined;
      pending = undefined;
      if ("error" in r) return `ERROR:${r.error}`;
      if (r.done) return "END";
      buf += r.value;
    }
  };
  return {
    next,
    close: () => {
      ac.abort();
      reader.cancel().catch(() => {});
      client.close();
    },
  };
}

function svc(name: string, labels: Record<string, string> = {}, ns = "default"): Json {
  return {
    kind: "Service",
    metadata: { name, namespace: ns, labels },
    spec: { ports: [{ port: 80 }] },
  };
}

function node(name: string): Json {
  return {
    kind: "Node",
    metadata: { name, labels: { "topology.kubernetes.io/zone": "z1" } },
    spec: { podCIDRs: ["10.1.0.0/24"] },
    status: { addresses: [{ type: "InternalIP", address: "192.168.0.2" }] },
  };
}

async function withServer(
  fn: (s: TestApiServer) => Promise<void>,
  opts: { bookmarkIntervalMs?: number; historyLimit?: number } = {},
) {
  const s = await startTestApiServer({ pki, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}

Deno.test("auth: bearer token, client certificate, 401 and 403 as Status JSON", async () => {
  await withServer(async (s) => {
    assert.equal((await call(s, "/api/v1/services")).status, 200);
    const bad = await call(s, "/api/v1/services", { token: "wrong" });
    assert.equal(bad.status, 401);
    assert.deepEqual(
      [bad.json.kind, bad.json.status, bad.json.reason, bad.json.code],
      ["Status", "Failure", "Unauthorized", 401],
    );
    assert.equal((await call(s, "/api/v1/services", { token: null })).status, 401);
    const forbidden = await call(s, "/api/v1/nodes", { token: NO_RIGHTS_TOKEN });
    assert.equal(forbidden.status, 403);
    assert.equal(forbidden.json.reason, "Forbidden");
    // kube-proxy's role may read but not write Services.
    const write = await call(s, "/api/v1/namespaces/default/services", {
      method: "POST",
      body: svc("x"),
    });
    assert.equal(write.status, 403);
    const cert = { cert: pki.clientCert, key: pki.clientKey };
    assert.equal((await call(s, "/api/v1/nodes", { token: null, cert })).status, 200);
    assert.equal(s.requests().at(-1)?.user, KUBE_PROXY_USER);
    const untrusted = { cert: pki.untrustedClientCert, key: pki.untrustedClientKey };
    assert.equal((await call(s, "/api/v1/nodes", { token: null, cert: untrusted })).status, 401);
  });
});

Deno.test("list: List kind, resourceVersion, limit/continue paging and 410 for an old continue", async () => {
  await withServer(async (s) => {
    for (const n of ["a", "b", "c", "d", "e"]) s.create(svc(n));
    const all = await call(s, "/api/v1/services");
    assert.equal(all.json.kind, "ServiceList");
    assert.equal(all.json.apiVersion, "v1");
    assert.equal(all.json.metadata.resourceVersion, s.store.resourceVersion);
    assert.equal(all.json.items.length, 5);
    assert.equal(all.json.items[0].kind, undefined, "items carry no kind, like the real server");
    const names: string[] = [];
    let cont = "";
    let pages = 0;
    do {
      const page = await call(s, `/api/v1/services?limit=2${cont ? `&continue=${cont}` : ""}`);
      assert.equal(page.json.metadata.resourceVersion, all.json.metadata.resourceVersion);
      names.push(...page.json.items.map((i: Json) => i.metadata.name));
      cont = encodeURIComponent(page.json.metadata.continue ?? "");
      pages++;
    } while (cont !== "");
    assert.deepEqual(names, ["a", "b", "c", "d", "e"]);
    assert.equal(pages, 3);
    const first = await call(s, "/api/v1/services?limit=2");
    assert.equal(first.json.metadata.remainingItemCount, 3);
    s.expireHistory();
    const old = await call(
      s,
      `/api/v1/services?limit=2&continue=${encodeURIComponent(first.json.metadata.continue)}`,
    );
    assert.equal(old.status, 410);
    assert.equal(old.json.reason, "Expired");
    const ns = await call(s, "/apis/discovery.k8s.io/v1/endpointslices");
    assert.equal(ns.json.kind, "EndpointSliceList");
    assert.equal(ns.json.apiVersion, "discovery.k8s.io/v1");
  });
});

Deno.test("list: label and field selectors; bad selectors are 400", async () => {
  await withServer(async (s) => {
    s.create(svc("plain"));
    s.create(svc("headless", { "service.kubernetes.io/headless": "" }));
    s.create(svc("other-proxy", { "service.kubernetes.io/service-proxy-name": "foo" }));
    s.create(svc("web", { app: "web" }, "prod"));
    s.create(node("node1"));
    s.create(node("node2"));
    const names = async (path: string) =>
      (await call(s, path)).json.items.map((i: Json) => i.metadata.name).sort();
    const sel = (q: string) => `/api/v1/services?labelSelector=${encodeURIComponent(q)}`;
    assert.deepEqual(
      await names(sel("!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless")),
      ["plain", "web"],
    );
    assert.deepEqual(await names(sel("service.kubernetes.io/headless")), ["headless"]);
    assert.deepEqual(await names(sel("app=web")), ["web"]);
    assert.deepEqual(await names(sel("app!=web")), ["headless", "other-proxy", "plain"]);
    assert.deepEqual(await names(sel("app in (web,api)")), ["web"]);
    assert.deepEqual(await names("/api/v1/namespaces/prod/services"), ["web"]);
    assert.deepEqual(
      await names("/api/v1/services?fieldSelector=metadata.namespace%3Dprod"),
      ["web"],
    );
    assert.deepEqual(await names("/api/v1/nodes?fieldSelector=metadata.name%3Dnode2"), ["node2"]);
    assert.equal((await call(s, sel("a b c"))).status, 400);
    assert.equal((await call(s, "/api/v1/nodes?fieldSelector=spec.x%3D1")).status, 400);
    const one = await call(s, "/api/v1/nodes/node1");
    assert.deepEqual([one.json.kind, one.json.metadata.name], ["Node", "node1"]);
    assert.equal((await call(s, "/api/v1/nodes/nope")).status, 404);
  });
});

Deno.test("validation: 422 for bad Services and EndpointSlices; insertInvalid bypasses it", async () => {
  await withServer(async (s) => {
    const bad = await call(s, "/api/v1/namespaces/default/services", {
      token: ADMIN_TOKEN,
      method: "POST",
      body: { ...svc("x"), spec: { clusterIP: "10.0.0.300", ports: [{ port: 70000 }] } },
    });
    assert.equal(bad.status, 422);
    assert.equal(bad.json.reason, "Invalid");
    const fields = bad.json.details.causes.map((c: Json) => c.field);
    assert.ok(fields.includes("spec.clusterIP") && fields.includes("spec.ports[0].port"), fields);
    const ok = await call(s, "/api/v1/namespaces/default/services", {
      token: ADMIN_TOKEN,
      method: "POST",
      body: svc("x"),
    });
    assert.equal(ok.status, 201);
    assert.match(ok.json.spec.clusterIP, /^172\.30\./);
    assert.throws(
      () =>
        s.create({
          kind: "EndpointSlice",
          metadata: { name: "x-1", namespace: "default" },
          addressType: "IPv5",
          endpoints: [],
        }),
      /addressType/,
    );
    assert.throws(() => s.create(svc("x")), /already exists/);
    s.insertInvalid({ ...svc("broken"), spec: { clusterIP: "not-an-ip", ports: [{ port: -1 }] } });
    const listed = await call(s, "/api/v1/services?fieldSelector=metadata.name%3Dbroken");
    assert.equal(listed.json.items[0].spec.clusterIP, "not-an-ip");
  });
});

Deno.test("events: kube-proxy may POST an events.k8s.io/v1 Event; a bad one is 422", async () => {
  await withServer(async (s) => {
    const event = {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: "node1.abc", namespace: "default" },
      eventTime: "2025-01-01T00:00:00.000000Z",
      reportingController: "kube-proxy",
      reportingInstance: "kube-proxy-node1",
      action: "StartKubeProxy",
      reason: "Starting",
      note: "Starting kube-proxy.",
      type: "Normal",
      regarding: { kind: "Node", name: "node1", uid: "node1" },
    };
    const path = "/apis/events.k8s.io/v1/namespaces/default/events";
    assert.equal((await call(s, path, { method: "POST", body: event })).status, 201);
    assert.equal(s.events()[0].note, "Starting kube-proxy.");
    const noTime = { ...event, metadata: { name: "node1.def" }, eventTime: undefined };
    const bad = await call(s, path, { method: "POST", body: noTime });
    assert.equal(bad.status, 422);
    assert.equal(bad.json.details.causes[0].field, "eventTime");
  });
});

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

Deno.test("startTestApiServer({ startStopped }) reserves a port and serves after start()", async () => {
  const s = await startTestApiServer({ pki, startStopped: true });
  try {
    assert.ok(s.port > 0);
    await assert.rejects(call(s, "/version"));
    await s.start();
    assert.equal((await call(s, "/version")).json.major, "1");
    assert.deepEqual((await call(s, "/api")).json.versions, ["v1"]);
    const groups = (await call(s, "/apis")).json.groups.map((g: Json) => g.name);
    assert.deepEqual(groups, ["discovery.k8s.io", "events.k8s.io"]);
  } finally {
    await s.close();
  }
});

Deno.test("writeKubeconfig: client-node lists through it with a token and with a client certificate", async () => {
  await withServer(async (s) => {
    s.create(node("node1"));
    for (const auth of [{ token: KUBE_PROXY_TOKEN }, "certificate" as const]) {
      for (const inline of [false, true]) {
        const path = await writeKubeconfig({ dir: DIR, server: s.url, pki, auth, inline });
        const kc = new k8s.KubeConfig();
        kc.loadFromFile(path);
        const nodes = await kc.makeApiClient(k8s.CoreV1Api).listNode();
        assert.deepEqual(nodes.items.map((n) => n.metadata?.name), ["node1"]);
      }
    }
    assert.deepEqual(
      s.requests({ verb: "list" }).map((r) => r.user),
      Array(4).fill(KUBE_PROXY_USER),
    );
  });
  await Deno.remove(DIR, { recursive: true });
});

Deno.test("exposeInNamespace: the server answers at 127.0.0.1:6443 inside a network namespace", async () => {
  if (Deno.uid() !== 0) throw new Error(`This test needs root (uid is "${Deno.uid()}")`);
  const ns = "ap-bridge";
  const run = (args: string[]) =>
    new Deno.Command("ip", { args, stderr: "piped", stdout: "piped" }).output();
  await run(["netns", "del", ns]);
  const add = await run(["netns", "add", ns]);
  assert.equal(add.code, 0, new TextDecoder().decode(add.stderr));
  try {
    await withServer(async (s) => {
      s.create(node("node1"));
      const bridge = await exposeInNamespace({ namespace: ns, serverPort: s.port, dir: DIR });
      try {
        await Deno.writeTextFile(`${DIR}/ca.crt`, pki.caCert);
        const out = await run([
          "netns",
          "exec",
          ns,
          "curl",
          "-sS",
          "--cacert",
          `${DIR}/ca.crt`,
          "-H",
          `Authorization: Bearer ${KUBE_PROXY_TOKEN}`,
          `${bridge.url}/api/v1/nodes`,
        ]); // deno-fmt-ignore
        const text = new TextDecoder().decode(out.stdout);
        assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
        assert.equal(JSON.parse(text).items[0].metadata.name, "node1");
      } finally {
        await bridge.close();
      }
    });
  } finally {
    await run(["netns", "del", ns]);
    await Deno.remove(DIR, { recursive: true }).catch(() => {});
  }
});
