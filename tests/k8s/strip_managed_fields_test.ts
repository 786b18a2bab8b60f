import assert from "node:assert/strict";
import { stripManagedFields } from "../../lib/k8s/_strip_managed_fields.ts";

Deno.test("stripManagedFields() drops metadata.managedFields and keeps everything else", () => {
  const object = {
    kind: "Service",
    metadata: { name: "web", namespace: "ns", managedFields: [{ manager: "kubectl" }] },
    spec: { clusterIP: "172.30.0.1" },
  };
  const stripped = stripManagedFields(object);
  assert.deepEqual(stripped, {
    kind: "Service",
    metadata: { name: "web", namespace: "ns" },
    spec: { clusterIP: "172.30.0.1" },
  });
  assert.equal(stripped.spec, object.spec);
  assert.ok("managedFields" in object.metadata, "the input is not mutated");
});

Deno.test("stripManagedFields() returns an object without managedFields unchanged", () => {
  const object = { metadata: { name: "web" } };
  assert.equal(stripManagedFields(object), object);
  const bare = { kind: "Node" };
  assert.equal(stripManagedFields(bare), bare);
});
