import assert from "node:assert/strict";
import type { V1EndpointSlice } from "@kubernetes/client-node";
import { validateEndpointSlice } from "../../lib/proxy/mod.ts";
import { EndpointSliceCache, mergeEndpointSlices } from "../../lib/proxy/_endpoint_slice_cache.ts";
import { type ValidatedEndpointSlice } from "../../lib/proxy/validate_endpoint_slice.ts";
import { makeSlice, NODE } from "./fixtures.ts";

function valid(slice: V1EndpointSlice): ValidatedEndpointSlice {
  const res = validateEndpointSlice(slice);
  if (!res.ok) throw new Error(res.reason);
  return res.value;
}

const KEY = "ns1/svc1:p80/TCP";

Deno.test("mergeEndpointSlices() merges slices, dedupes and sorts by ip:port text", () => {
  const a = valid(makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.10" }, { ip: "10.0.0.2" }]));
  const b = valid(
    makeSlice("ns1", "svc1-b", "svc1", [{ ip: "10.0.0.2" }, { ip: "10.0.0.3", nodeName: NODE }]),
  );
  const merged = mergeEndpointSlices([b, a], "IPv4", NODE);
  assert.deepEqual([...merged.keys()], [KEY]);
  const eps = merged.get(KEY)!;
  assert.deepEqual(eps.map((e) => e.address), ["10.0.0.10:8080", "10.0.0.2:8080", "10.0.0.3:8080"]);
  assert.deepEqual(eps.map((e) => e.isLocal), [false, false, true]);
});

Deno.test("mergeEndpointSlices() prefers the non-terminating copy of a duplicate endpoint", () => {
  const old = valid(makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1" }]));
  const dying = valid(
    makeSlice("ns1", "svc1-b", "svc1", [{ ip: "10.0.0.1", ready: false, terminating: true }]),
  );
  for (const order of [[old, dying], [dying, old]]) {
    const eps = mergeEndpointSlices(order, "IPv4", NODE).get(KEY)!;
    assert.equal(eps.length, 1);
    assert.equal(eps[0]!.ready, true);
  }
});

Deno.test("mergeEndpointSlices() matches ports by name and protocol and skips other families", () => {
  const slice = valid(makeSlice("ns1", "svc1-a", "svc1", [{ ip: "10.0.0.1" }], {
    ports: [{ name: "dns", port: 53, protocol: "UDP" }, { name: "dns-tcp", port: 53 }],
  }));
  const v6 = valid(
    makeSlice("ns1", "svc1-v6", "svc1", [{ ip: "fd00:10::1" }], { addressType: "IPv6" }),
  );
  const merged = mergeEndpointSlices([slice, v6], "IPv4", NODE);
  assert.deepEqual([...merged.keys()].sort(), ["ns1/svc1:dns-tcp/TCP", "ns1/svc1:dns/UDP"]);
  const merged6 = mergeEndpointSlices([slice, v6], "IPv6", NODE);
  assert.deepEqual(merged6.get(KEY)!.map((e) => e.address), ["[fd00:10::1]:8080"]);
});

Deno.test("EndpointSliceCache moves a slice whose service label changed and forgets deleted ones", () => {
  const cache = new EndpointSliceCache(NODE);
  cache.set(valid(makeSlice("ns1", "s", "svc1", [{ ip: "10.0.0.1" }])));
  assert.equal(cache.endpointsFor("ns1/svc1", "IPv4").size, 1);
  const prev = cache.set(valid(makeSlice("ns1", "s", "svc2", [{ ip: "10.0.0.1" }])));
  assert.equal(prev?.serviceKey, "ns1/svc1");
  assert.equal(cache.endpointsFor("ns1/svc1", "IPv4").size, 0);
  assert.equal(cache.endpointsFor("ns1/svc2", "IPv4").size, 1);
  assert.equal(cache.delete("ns1/s")?.serviceKey, "ns1/svc2");
  assert.equal(cache.size, 0);
  assert.equal(cache.delete("ns1/s"), undefined);
});
