/**
 * Tests of the test API server itself (auth, list, selectors, validation, events, lifecycle,
 * kubeconfig, namespace bridge) over real TLS, so client tests can trust what it says about
 * the protocol. Watch and fault tests: api_server_watch_test.ts.
 */
import assert from "node:assert/strict";
import * as k8s from "@kubernetes/client-node";
import {
  ADMIN_TOKEN,
  apiCall as call,
  exposeInNamespace,
  KUBE_PROXY_TOKEN,
  KUBE_PROXY_USER,
  NO_RIGHTS_TOKEN,
  startTestApiServer,
  writeKubeconfig,
} from "./api_server/mod.ts";
import { node, pki, svc, withServer } from "./api_server/test_fixtures.ts";

const DIR = "/tmp/deno-kube-proxy/ap-test";

// deno-lint-ignore no-explicit-any
type Json = any;

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

Deno.test("list: resourceVersion=0 is answered whole from the current state, limit ignored", async () => {
  await withServer(async (s) => {
    for (const n of ["a", "b", "c"]) s.create(svc(n));
    const whole = await call(s, "/api/v1/services?limit=2&resourceVersion=0");
    assert.equal(whole.status, 200);
    assert.deepEqual(whole.json.items.map((i: Json) => i.metadata.name), ["a", "b", "c"]);
    assert.equal(whole.json.metadata.continue, undefined);
    assert.equal(whole.json.metadata.resourceVersion, s.store.resourceVersion);
    // Not older than N without limit: the watch cache answers, even after a compaction.
    const rv = whole.json.metadata.resourceVersion;
    s.create(svc("d"));
    s.expireHistory();
    const notOlder = await call(s, `/api/v1/services?resourceVersion=${rv}`);
    assert.equal(notOlder.status, 200);
    assert.equal(notOlder.json.items.length, 4);
    // With limit it is an exact read from etcd: gone once compacted.
    const exact = await call(s, `/api/v1/services?limit=2&resourceVersion=${rv}`);
    assert.equal(exact.status, 410);
    const tooLarge = await call(s, `/api/v1/services?resourceVersion=${Number(rv) + 100}`);
    assert.equal(tooLarge.status, 504);
    assert.deepEqual(tooLarge.json.details.causes.map((c: Json) => c.reason), [
      "ResourceVersionTooLarge",
    ]);
    const both = await call(s, `/api/v1/services?resourceVersion=0&continue=x`);
    assert.equal(both.status, 400);
  });
});

Deno.test("list: pageWatchCacheLists makes the server page resourceVersion=0 lists too", async () => {
  await withServer(async (s) => {
    for (const n of ["a", "b", "c"]) s.create(svc(n));
    const first = await call(s, "/api/v1/services?limit=2&resourceVersion=0");
    assert.deepEqual(first.json.items.map((i: Json) => i.metadata.name), ["a", "b"]);
    const cont = encodeURIComponent(first.json.metadata.continue);
    const rest = await call(s, `/api/v1/services?limit=2&continue=${cont}`);
    assert.deepEqual(rest.json.items.map((i: Json) => i.metadata.name), ["c"]);
    assert.equal(rest.json.metadata.continue, undefined);
  }, { pageWatchCacheLists: true });
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

Deno.test("startTestApiServer({ startStopped }) reserves a port and serves after start()", async () => {
  const s = await startTestApiServer({ pki, startStopped: true });
  try {
    assert.ok(s.port > 0);
    await assert.rejects(call(s, "/version"));
    await s.start();
    assert.equal((await call(s, "/version")).json.major, "1");
    assert.deepEqual((await call(s, "/api")).json.versions, ["v1"]);
    const groups = (await call(s, "/apis")).json.groups.map((g: Json) => g.name);
    assert.deepEqual(groups, ["discovery.k8s.io", "networking.k8s.io", "events.k8s.io"]);
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
