import assert from "node:assert/strict";
import { createProxyTracker } from "../../lib/proxy/mod.ts";
import { ServiceCIDRStore, validateServiceCIDR } from "../../lib/proxy/_service_cidrs.ts";
import type { ObjectEvent, ObjectKind } from "../../lib/source/mod.ts";

function cidrObject(name: unknown, cidrs: unknown): ObjectEvent["object"] {
  return {
    apiVersion: "networking.k8s.io/v1",
    kind: "ServiceCIDR",
    metadata: { name },
    spec: { cidrs },
  } as ObjectEvent["object"];
}

function cidrEvent(type: ObjectEvent["type"], name: unknown, cidrs: unknown): ObjectEvent {
  return { kind: "ServiceCIDR", type, object: cidrObject(name, cidrs) } as ObjectEvent;
}

Deno.test("validateServiceCIDR() keeps good entries and names each skipped one", () => {
  const res = validateServiceCIDR(
    cidrObject("kubernetes", [
      "172.30.0.0/16",
      "172.31.1.1/16",
      "nope",
      7,
      "0.0.0.0/0",
      "fd00::/112",
    ]),
  );
  assert.ok(res.ok);
  assert.deepEqual(res.value.value, { name: "kubernetes", cidrs: ["172.30.0.0/16", "fd00::/112"] });
  assert.equal(res.value.skipped.length, 4);
  assert.match(
    res.value.skipped[0]!,
    /spec\.cidrs\[1\] "172\.31\.1\.1\/16" is not in canonical form/,
  );
  assert.match(res.value.skipped[1]!, /spec\.cidrs\[2\] "nope" is not a valid CIDR/);
  assert.match(res.value.skipped[2]!, /spec\.cidrs\[3\] 7 is not a string/);
  assert.match(res.value.skipped[3]!, /covers every address/);
});

Deno.test("validateServiceCIDR() rejects an object without a usable name or cidrs list", () => {
  const noName = validateServiceCIDR(cidrObject("Bad_Name", ["172.30.0.0/16"]));
  assert.ok(!noName.ok);
  assert.match(noName.reason, /metadata\.name "Bad_Name" is not a valid DNS-1123 subdomain/);
  const notList = validateServiceCIDR(cidrObject("x", "172.30.0.0/16"));
  assert.ok(!notList.ok);
  assert.match(notList.reason, /spec\.cidrs/);
});

Deno.test("ServiceCIDRStore merges objects per family, sorted and without duplicates", () => {
  const store = new ServiceCIDRStore();
  store.set({ name: "b", cidrs: ["172.30.0.0/16", "fd00::/112"] });
  store.set({ name: "a", cidrs: ["10.96.0.0/12", "172.30.0.0/16"] });
  assert.deepEqual(store.cidrsFor("IPv4"), ["10.96.0.0/12", "172.30.0.0/16"]);
  assert.deepEqual(store.cidrsFor("IPv6"), ["fd00::/112"]);
  store.delete("b");
  assert.deepEqual(store.cidrsFor("IPv6"), []);
  assert.deepEqual(store.cidrsFor("IPv4"), ["10.96.0.0/12", "172.30.0.0/16"]);
});

Deno.test("ProxyTracker puts each family's ServiceCIDRs in its snapshot and reports bad entries", () => {
  const invalid: [ObjectKind, string, string][] = [];
  const t = createProxyTracker({
    nodeName: "node1",
    onInvalid: (kind, key, reason) => invalid.push([kind, key, reason]),
  });
  assert.deepEqual(t.snapshot("IPv4").serviceCIDRs, []);
  t.handleEvent(cidrEvent("ADDED", "kubernetes", ["172.30.0.0/16", "fd00::/112", "bad"]));
  t.handleEvent(cidrEvent("ADDED", "Not/A/Name", ["10.0.0.0/8"]));
  assert.deepEqual(t.snapshot("IPv4").serviceCIDRs, ["172.30.0.0/16"]);
  assert.deepEqual(t.snapshot("IPv6").serviceCIDRs, ["fd00::/112"]);
  assert.deepEqual(invalid.map(([k, key]) => `${k} ${key}`), [
    "ServiceCIDR kubernetes",
    "ServiceCIDR Not/A/Name",
  ]);
  t.handleEvent(cidrEvent("MODIFIED", "kubernetes", ["172.30.0.0/16", "172.31.0.0/16"]));
  assert.deepEqual(t.snapshot("IPv4").serviceCIDRs, ["172.30.0.0/16", "172.31.0.0/16"]);
  t.handleEvent(cidrEvent("DELETED", "kubernetes", []));
  assert.deepEqual(t.snapshot("IPv4").serviceCIDRs, []);
});
