import assert from "node:assert/strict";
import { type KubeObject } from "../../lib/k8s/mod.ts";
import {
  deletedStub,
  objectKey,
  sameVersion,
  unlistedKeys,
  versionOf,
} from "../../lib/k8s/_relist_diff.ts";

function svc(name: string, rv: string, port = 80, extra: Record<string, unknown> = {}): KubeObject {
  return {
    metadata: { name, namespace: "ns", resourceVersion: rv },
    spec: { clusterIP: "172.30.0.1", ports: [{ port }] },
    ...extra,
  } as KubeObject;
}

Deno.test("objectKey() is namespace/name, or name for cluster-scoped objects", () => {
  assert.equal(objectKey(svc("a", "1")), "ns/a");
  assert.equal(objectKey({ metadata: { name: "node-1" } }), "node-1");
});

Deno.test("unlistedKeys() names, in key order, the keys a complete list no longer has", () => {
  const seen = new Map([["ns/keep", "5"], ["ns/gone", "7"], ["node-1", "3"], [
    "ns/also-gone",
    "2",
  ]]);
  assert.deepEqual(unlistedKeys(seen, new Set(["ns/keep", "node-1", "ns/new"])), [
    "ns/also-gone",
    "ns/gone",
  ]);
  assert.deepEqual(unlistedKeys(seen, new Set(seen.keys())), []);
  assert.deepEqual(unlistedKeys(new Map(), new Set(["ns/a"])), []);
});

Deno.test("sameVersion() trusts only an equal, non-empty resourceVersion", () => {
  assert.ok(sameVersion("5", svc("a", "5", 81)));
  assert.ok(!sameVersion("5", svc("a", "6", 80)));
  assert.ok(!sameVersion(undefined, svc("a", "5")));
  assert.ok(!sameVersion("", svc("a", "")));
  assert.equal(versionOf({ metadata: { name: "x" } }), "");
});

Deno.test("deletedStub() keeps the key's namespace and name", () => {
  assert.deepEqual(deletedStub("ns/a", "7").metadata, {
    namespace: "ns",
    name: "a",
    resourceVersion: "7",
  });
  assert.deepEqual(deletedStub("node-1", "8").metadata, { name: "node-1", resourceVersion: "8" });
  assert.equal(objectKey(deletedStub("ns/a", "7")), "ns/a");
});
