import assert from "node:assert/strict";
import {
  deletedStub,
  diffRelist,
  type KubeObject,
  objectKey,
  sameVersion,
  versionOf,
} from "../../lib/k8s/mod.ts";

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

Deno.test("diffRelist() emits nothing for a relist of the same versions", () => {
  const seen = new Map([["ns/a", "5"], ["ns/b", "6"]]);
  const { changes, next } = diffRelist(seen, [svc("a", "5"), svc("b", "6")]);
  assert.deepEqual(changes, []);
  assert.deepEqual([...next], [["ns/a", "5"], ["ns/b", "6"]]);
});

Deno.test("diffRelist() emits only real additions, modifications and deletions", () => {
  const seen = new Map([["ns/keep", "5"], ["ns/change", "6"], ["ns/gone", "7"]]);
  const listed = [svc("change", "9", 8080), svc("keep", "5"), svc("new", "10")];
  const { changes, next } = diffRelist(seen, listed);
  assert.deepEqual(
    changes.map((c) => [c.type, objectKey(c.object), c.object.metadata?.resourceVersion]),
    [["MODIFIED", "ns/change", "9"], ["ADDED", "ns/new", "10"], ["DELETED", "ns/gone", "7"]],
  );
  assert.equal(changes[0]!.object, listed[0], "a listed object is handed on as listed");
  assert.deepEqual([...next], [["ns/change", "9"], ["ns/keep", "5"], ["ns/new", "10"]]);
});

Deno.test("diffRelist() hands on every object of a server with a new history", () => {
  // Every object has a new resourceVersion; the trackers, not the cache, tell that the content
  // is the same (tests/proxy/proxy_tracker_test.ts), so no sync follows.
  const { changes, next } = diffRelist(new Map([["ns/a", "500"]]), [svc("a", "3")]);
  assert.deepEqual(changes.map((c) => [c.type, objectKey(c.object)]), [["MODIFIED", "ns/a"]]);
  assert.equal(next.get("ns/a"), "3");
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
