import assert from "node:assert/strict";
import { diffRelist, type KubeObject, objectKey, sameObject } from "../../lib/k8s/mod.ts";

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

Deno.test("diffRelist() emits nothing for a relist of the same objects", () => {
  const cache = new Map([["ns/a", svc("a", "5")], ["ns/b", svc("b", "6")]]);
  const { changes, next } = diffRelist(cache, [svc("a", "5"), svc("b", "6")]);
  assert.deepEqual(changes, []);
  assert.equal(next.size, 2);
});

Deno.test("diffRelist() emits only real additions, modifications and deletions", () => {
  const cache = new Map([
    ["ns/keep", svc("keep", "5")],
    ["ns/change", svc("change", "6")],
    ["ns/gone", svc("gone", "7")],
  ]);
  const listed = [svc("change", "9", 8080), svc("keep", "5"), svc("new", "10")];
  const { changes, next } = diffRelist(cache, listed);
  assert.deepEqual(
    changes.map((c) => [c.type, objectKey(c.object), c.object.metadata?.resourceVersion]),
    [["MODIFIED", "ns/change", "9"], ["ADDED", "ns/new", "10"], ["DELETED", "ns/gone", "7"]],
  );
  assert.deepEqual([...next.keys()], ["ns/change", "ns/keep", "ns/new"]);
});

Deno.test("diffRelist() ignores new resourceVersions of unchanged objects but remembers them", () => {
  // A server whose history restarted: every object has a new resourceVersion, and the list
  // items lack kind/apiVersion that the watch events carried.
  const cache = new Map([["ns/a", svc("a", "500", 80, { kind: "Service", apiVersion: "v1" })]]);
  const { changes, next } = diffRelist(cache, [svc("a", "3")]);
  assert.deepEqual(changes, []);
  assert.equal(next.get("ns/a")?.metadata?.resourceVersion, "3");
});

Deno.test("sameObject() compares resourceVersion first, then content", () => {
  assert.ok(sameObject(svc("a", "5", 80), svc("a", "5", 81))); // same version: trusted as same
  assert.ok(!sameObject(svc("a", "5", 80), svc("a", "6", 81)));
  assert.ok(sameObject(svc("a", "5", 80), svc("a", "6", 80)));
});
