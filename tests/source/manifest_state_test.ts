import assert from "node:assert/strict";
import type { ManifestObject } from "../../lib/source/_manifest_parse.ts";
import {
  canonicalJson,
  diffManifestStates,
  type ManifestState,
  mergeManifestFiles,
} from "../../lib/source/_manifest_state.ts";

function service(name: string, clusterIP: string, labels?: Record<string, string>): ManifestObject {
  return {
    kind: "Service",
    key: `Service/ns/${name}`,
    object: {
      apiVersion: "v1",
      kind: "Service",
      metadata: { name, namespace: "ns", ...(labels ? { labels } : {}) },
      spec: { clusterIP },
    },
  };
}

function slice(name: string, labels: Record<string, string>): ManifestObject {
  return {
    kind: "EndpointSlice",
    key: `EndpointSlice/ns/${name}`,
    object: {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { name, namespace: "ns", labels },
      addressType: "IPv4",
      endpoints: [],
    },
  };
}

function node(name: string): ManifestObject {
  return { kind: "Node", key: `Node/${name}`, object: { kind: "Node", metadata: { name } } };
}

function state(...objects: ManifestObject[]): ManifestState {
  return new Map(objects.map((o) => [o.key, o]));
}

Deno.test("mergeManifestFiles() lets the file whose path sorts last win and reports it", () => {
  const merged = mergeManifestFiles([
    { path: "/m/b.yaml", objects: [service("web", "172.30.0.2")] },
    { path: "/m/a.yaml", objects: [service("web", "172.30.0.1"), service("other", "172.30.0.3")] },
  ], "node-a");
  const web = merged.state.get("Service/ns/web");
  assert.equal(web?.kind === "Service" ? web.object.spec?.clusterIP : undefined, "172.30.0.2");
  assert.deepEqual(merged.duplicates, [
    { key: "Service/ns/web", winner: "/m/b.yaml", losers: ["/m/a.yaml"] },
  ]);
  assert.equal(merged.state.size, 2);
});

Deno.test("mergeManifestFiles() drops objects another proxy or no proxy handles", () => {
  const merged = mergeManifestFiles([{
    path: "/m/a.yaml",
    objects: [
      service("mine", "172.30.0.1", { app: "x" }),
      service("theirs", "172.30.0.2", { "service.kubernetes.io/service-proxy-name": "other" }),
      service("headless", "None", { "service.kubernetes.io/headless": "" }),
      slice("mine-1", { "kubernetes.io/service-name": "mine" }),
      slice("headless-1", { "service.kubernetes.io/headless": "" }),
    ],
  }], "node-a");
  assert.deepEqual([...merged.state.keys()], ["Service/ns/mine", "EndpointSlice/ns/mine-1"]);
});

Deno.test("mergeManifestFiles() keeps only this node's Node", () => {
  const merged = mergeManifestFiles(
    [{ path: "/m/a.yaml", objects: [node("node-a"), node("node-b")] }],
    "node-b",
  );
  assert.deepEqual([...merged.state.keys()], ["Node/node-b"]);
});

Deno.test("diffManifestStates() emits ADDED, MODIFIED and DELETED with the last known object", () => {
  const prev = state(service("kept", "172.30.0.1"), service("changed", "172.30.0.2"), node("n"));
  const next = state(
    service("kept", "172.30.0.1"),
    service("changed", "172.30.0.9"),
    service("new", "172.30.0.3"),
  );
  const events = diffManifestStates(prev, next);
  assert.deepEqual(
    events.map((e) => [e.type, e.kind, e.object.metadata?.name]),
    [
      ["DELETED", "Node", "n"],
      ["MODIFIED", "Service", "changed"],
      ["ADDED", "Service", "new"],
    ],
  );
  assert.equal(events[0]?.object, prev.get("Node/n")?.object);
});

Deno.test("diffManifestStates() sees an object with the same content in another key order as unchanged", () => {
  const a = service("web", "172.30.0.1");
  const reordered: ManifestObject = {
    kind: "Service",
    key: a.key,
    object: {
      spec: { clusterIP: "172.30.0.1" },
      metadata: { namespace: "ns", name: "web" },
      kind: "Service",
      apiVersion: "v1",
    },
  };
  assert.deepEqual(diffManifestStates(state(a), state(reordered)), []);
});

Deno.test("diffManifestStates() turns a newly added proxy label into DELETED", () => {
  const before = mergeManifestFiles([{ path: "/a", objects: [service("web", "172.30.0.1")] }], "n");
  const after = mergeManifestFiles([{
    path: "/a",
    objects: [service("web", "172.30.0.1", { "service.kubernetes.io/service-proxy-name": "x" })],
  }], "n");
  const events = diffManifestStates(before.state, after.state);
  assert.deepEqual(events.map((e) => [e.type, e.object.metadata?.labels]), [[
    "DELETED",
    undefined,
  ]]);
});

Deno.test("canonicalJson() ignores key order but not array order", () => {
  assert.equal(
    canonicalJson({ b: 1, a: { d: 2, c: 3 } }),
    canonicalJson({ a: { c: 3, d: 2 }, b: 1 }),
  );
  assert.notEqual(canonicalJson({ a: [1, 2] }), canonicalJson({ a: [2, 1] }));
});
