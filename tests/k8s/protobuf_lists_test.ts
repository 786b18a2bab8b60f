/**
 * Lists in kube-apiserver's protobuf encoding. The fixtures are a real kube-apiserver's (v1.28.7)
 * answers, captured by scripts/capture_api_fixtures.ts: the same Services and EndpointSlices in
 * JSON and in protobuf, and protobuf Status answers. A decoded protobuf item must say what its
 * JSON twin says, member for member, and validate to the same result. Members newer than that
 * server (ipMode, forNodes) and malformed bodies are written here with a few wire-format helpers.
 */
import assert from "node:assert/strict";
import { splitListText } from "../../lib/k8s/_list_items.ts";
import { listsInProtobuf, splitListProtobuf } from "../../lib/k8s/_list_protobuf.ts";
import { PROTOBUF_OR_JSON, responseFailure } from "../../lib/k8s/_list_page.ts";
import { needsRelist } from "../../lib/k8s/_api_errors.ts";
import { ProtobufError } from "../../lib/k8s/_protobuf_wire.ts";
import { validateEndpointSlice, validateService } from "../../lib/proxy/mod.ts";
import { lastChangeTriggerTime } from "../../lib/proxy/validate_endpoint_slice.ts";
import type { ObjectKind } from "../../lib/source/mod.ts";
import { systemClock } from "../../lib/sync/mod.ts";
import { waitFor, withApiSource } from "./api_support.ts";

const FIXTURES = new URL("./fixtures/api_answers/", import.meta.url);
const fixtureBytes = (name: string) => Deno.readFileSync(new URL(name, FIXTURES));
const fixtureText = (name: string) => Deno.readTextFileSync(new URL(name, FIXTURES));
const PROTOBUF = "application/vnd.kubernetes.protobuf";

const LISTS = [
  { file: "services", kind: "Service", resource: "services" },
  { file: "endpointslices", kind: "EndpointSlice", resource: "endpointslices" },
] as const;

/** Every member `decoded` has, `json` has at the same path with the same value. */
function assertWithin(decoded: unknown, json: unknown, path: string): void {
  if (decoded === null || typeof decoded !== "object") {
    assert.deepEqual(decoded, json, path);
    return;
  }
  assert.equal(typeof json, "object", path);
  if (Array.isArray(decoded)) assert.equal(decoded.length, (json as unknown[]).length, path);
  for (const [k, v] of Object.entries(decoded)) {
    assertWithin(v, (json as Record<string, unknown>)[k], `${path}.${k}`);
  }
}

function validate(kind: ObjectKind, object: unknown) {
  // deno-lint-ignore no-explicit-any
  return kind === "Service" ? validateService(object as any) : validateEndpointSlice(object as any);
}

for (const { file, kind } of LISTS) {
  Deno.test(`a protobuf ${kind} list decodes to what its JSON twin says`, () => {
    const pb = splitListProtobuf(fixtureBytes(`${file}.pb`), kind);
    const json = splitListText(fixtureText(`${file}.json`));
    assert.deepEqual(pb.rest, { ...json.rest, items: [] });
    assert.ok(pb.count >= 5);
    assert.equal(pb.count, json.count);
    for (let i = 0; i < pb.count; i++) {
      const decoded = pb.item(i) as { metadata: Record<string, unknown> };
      const twin = json.item(i) as { metadata: Record<string, unknown> };
      const name = String(twin.metadata.name);
      assertWithin(decoded, twin, name);
      for (const key of ["name", "namespace", "resourceVersion", "labels", "annotations"]) {
        assert.deepEqual(decoded.metadata[key], twin.metadata[key], `${name} metadata.${key}`);
      }
      const result = validate(kind, decoded);
      assert.deepEqual(result, validate(kind, twin), name);
      assert.ok(result.ok, name);
      if (kind === "EndpointSlice") {
        // deno-lint-ignore no-explicit-any
        assert.equal(lastChangeTriggerTime(decoded as any), lastChangeTriggerTime(twin as any));
      }
    }
  });
}

Deno.test("the fixtures hold the cases the proxy reads", () => {
  const services = splitListProtobuf(fixtureBytes("services.pb"), "Service");
  const ports = Array.from({ length: services.count }, (_, i) =>
    validateService(
      // deno-lint-ignore no-explicit-any
      services.item(i) as any,
    )).flatMap((r) => (r.ok ? r.value.ports.IPv4 : []));
  const has = (p: (sp: (typeof ports)[number]) => boolean) => ports.some(p);
  assert.ok(has((p) => p.protocol === "UDP") && has((p) => p.protocol === "SCTP"));
  assert.ok(has((p) => p.nodePort === 30080 && p.externalPolicyLocal && p.internalPolicyLocal));
  assert.ok(has((p) => p.healthCheckNodePort > 0));
  assert.ok(has((p) => p.loadBalancerIPs.includes("192.0.2.10")));
  assert.ok(has((p) => p.loadBalancerSourceRanges.includes("198.51.100.7/32")));
  assert.ok(
    has((p) => p.stickyMaxAgeSeconds === 600) && has((p) => p.stickyMaxAgeSeconds === 10800),
  );
  assert.ok(has((p) => p.externalIPs.length === 2));
  const slices = splitListProtobuf(fixtureBytes("endpointslices.pb"), "EndpointSlice");
  const endpoints = Array.from({ length: slices.count }, (_, i) =>
    validateEndpointSlice(
      // deno-lint-ignore no-explicit-any
      slices.item(i) as any,
    )).flatMap((r) => (r.ok ? r.value.endpoints : []));
  assert.ok(endpoints.some((e) => !e.ready && e.serving && e.terminating && e.zone === "zone-2"));
  assert.ok(endpoints.some((e) => e.zoneHints.join() === "zone-1,zone-2"));
  assert.ok(endpoints.some((e) => e.ip === "2001:db8::1"));
});

Deno.test("a protobuf Status answer gives the error its members say", async () => {
  const answer = (file: string, status: number) => ({
    status,
    headers: { "content-type": PROTOBUF },
    body: null,
    text: () => Promise.reject(new Error("read as bytes")),
    bytes: () => Promise.resolve(fixtureBytes(file)),
    close: () => Promise.resolve(),
  });
  const tooLarge = await responseFailure(
    answer("status-rv-too-large.pb", 504),
    "Cannot list Services",
    systemClock,
  );
  assert.match(tooLarge.message, /Too large resource version: 999999999/);
  assert.deepEqual(tooLarge.causes, ["ResourceVersionTooLarge"]);
  assert.equal(tooLarge.retryAfterMs, 1000);
  assert.ok(needsRelist(tooLarge));
  const missing = await responseFailure(answer("status-404.pb", 404), "Cannot get", systemClock);
  assert.equal(missing.status, 404);
  assert.equal(missing.reason, "NotFound");
  assert.match(missing.message, /services "missing" not found/);
  const denied = await responseFailure(answer("status-401.pb", 401), "Cannot list", systemClock);
  assert.match(denied.message, /\(401 Unauthorized\).*: Unauthorized$/);
});

// Wire-format helpers for what the fixtures' server cannot send.
function varint(n: bigint): number[] {
  let v = BigInt.asUintN(64, n);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
const int = (field: number, n: number) => [...varint(BigInt(field << 3)), ...varint(BigInt(n))];
const bytesField = (field: number, b: number[]) => [
  ...varint(BigInt((field << 3) | 2)),
  ...varint(BigInt(b.length)),
  ...b,
];
const str = (field: number, s: string) => bytesField(field, [...new TextEncoder().encode(s)]);
const msg = (field: number, ...parts: number[][]) => bytesField(field, parts.flat());
const envelope = (kind: string, ...items: number[][]) =>
  new Uint8Array([
    0x6b,
    0x38,
    0x73,
    0x00,
    ...msg(1, str(1, "v1"), str(2, kind)),
    ...msg(2, msg(1, str(2, "7")), ...items.map((i) => msg(2, i))),
  ]);
const objectMeta = (name: string, labels: Record<string, string> = {}) =>
  msg(
    1,
    str(1, name),
    str(3, "ns"),
    ...Object.entries(labels).map(([k, v]) => msg(11, str(1, k), str(2, v))),
  );

Deno.test("a Proxy-mode load-balancer IP and node hints are read from protobuf", () => {
  const service = [
    ...objectMeta("lb"),
    ...msg(2, str(3, "10.0.0.9"), str(4, "LoadBalancer"), msg(1, int(3, 80), int(5, 30001))),
    ...msg(
      3,
      msg(1, msg(1, str(1, "192.0.2.1"), str(3, "Proxy")), msg(1, str(1, "192.0.2.2"))),
    ),
  ];
  const list = splitListProtobuf(envelope("ServiceList", service), "Service");
  assert.deepEqual(list.rest.metadata, { resourceVersion: "7" });
  // deno-lint-ignore no-explicit-any
  const result = validateService(list.item(0) as any);
  assert.ok(result.ok);
  assert.deepEqual(result.value.ports.IPv4[0]!.loadBalancerIPs, ["192.0.2.2"]);

  const slice = [
    ...objectMeta("s1", { "kubernetes.io/service-name": "lb" }),
    ...str(4, "IPv4"),
    ...msg(3, int(3, 80)),
    ...msg(2, str(1, "10.1.0.1"), msg(8, msg(2, str(1, "node-b")), msg(2, str(1, "node-a")))),
  ];
  const slices = splitListProtobuf(envelope("EndpointSliceList", slice), "EndpointSlice");
  // deno-lint-ignore no-explicit-any
  const sliceResult = validateEndpointSlice(slices.item(0) as any);
  assert.ok(sliceResult.ok);
  assert.deepEqual(sliceResult.value.endpoints[0]!.nodeHints, ["node-a", "node-b"]);
});

Deno.test("a bad value decoded from protobuf is rejected by validation, not written", () => {
  // A port of -1 travels as a ten-byte varint; it must come out as -1, not 2^64 - 1.
  const service = [...objectMeta("neg"), ...msg(2, str(3, "10.0.0.9"), msg(1, int(3, -1)))];
  const item = splitListProtobuf(envelope("ServiceList", service), "Service").item(0);
  assert.deepEqual((item as { spec: unknown }).spec, {
    clusterIP: "10.0.0.9",
    ports: [{ port: -1 }],
  });
  // deno-lint-ignore no-explicit-any
  const result = validateService(item as any);
  assert.equal(result.ok, false);
  assert.match(result.ok ? "" : result.reason, /spec\.ports\[0\]\.port/);
});

Deno.test("a malformed protobuf answer is refused with ProtobufError", () => {
  const good = envelope("ServiceList", objectMeta("a"));
  const bad: [string, Uint8Array, ObjectKind][] = [
    ["no magic", good.slice(1), "Service"],
    ["cut short", good.slice(0, good.length - 3), "Service"],
    ["another kind", good, "EndpointSlice"],
    ["a kind without a reader", good, "Node"],
    ["compressed inside", new Uint8Array([0x6b, 0x38, 0x73, 0, ...str(3, "gzip")]), "Service"],
  ];
  for (const [what, bytes, kind] of bad) {
    assert.throws(() => splitListProtobuf(bytes, kind), ProtobufError, what);
  }
  // A string field sent as a varint: refused when the item is read, not misread.
  const wrongType = envelope("ServiceList", [...msg(1, int(1, 5))]);
  assert.throws(() => splitListProtobuf(wrongType, "Service").item(0), ProtobufError);
  // A field of a type protobuf has no more (a group) cannot be passed over.
  const group = envelope("ServiceList", [...varint(BigInt((9 << 3) | 3))]);
  assert.throws(() => splitListProtobuf(group, "Service").item(0), ProtobufError);
});

Deno.test("fields the reader does not know are passed over by their wire type", () => {
  const fixed64 = [...varint(BigInt((30 << 3) | 1)), 1, 2, 3, 4, 5, 6, 7, 8];
  const fixed32 = [...varint(BigInt((31 << 3) | 5)), 1, 2, 3, 4];
  const service = [...fixed64, ...objectMeta("x"), ...fixed32, ...int(29, 2 ** 40)];
  const item = splitListProtobuf(envelope("ServiceList", service), "Service").item(0);
  assert.deepEqual(item, { metadata: { name: "x", namespace: "ns" } });
});

Deno.test("only Services and EndpointSlices are listed in protobuf", () => {
  assert.deepEqual(
    (["Service", "EndpointSlice", "Node", "ServiceCIDR"] as const).filter(listsInProtobuf),
    ["Service", "EndpointSlice"],
  );
});

for (const protobufLists of [true, false]) {
  Deno.test(
    `the API source asks for ${protobufLists ? "protobuf" : "JSON"} lists and JSON watches`,
    async () => {
      await withApiSource({
        protobufLists,
        beforeStart: (server) => {
          // Answered as a real kube-apiserver answered, whatever was asked.
          for (const { file, resource } of LISTS) {
            server.faults.answerNext({
              status: 200,
              contentType: PROTOBUF,
              body: fixtureBytes(`${file}.pb`),
              match: { verb: "list", resource },
            });
          }
        },
      }, async ({ server, sink }) => {
        await waitFor("every kind listed", () => sink.synced.size === 4);
        for (const { file, kind, resource } of LISTS) {
          const json = splitListText(fixtureText(`${file}.json`));
          const first = sink.events.filter((e) => e.kind === kind).slice(0, json.count);
          assert.equal(first.length, json.count, kind);
          for (let i = 0; i < json.count; i++) {
            assert.equal(first[i]!.type, "ADDED");
            assert.deepEqual(validate(kind, first[i]!.object), validate(kind, json.item(i)));
          }
          const lists = server.faults.log.filter((r) =>
            r.verb === "list" && r.resource === resource
          );
          assert.equal(lists[0]?.accept, protobufLists ? PROTOBUF_OR_JSON : "application/json");
        }
        const others = server.faults.log.filter((r) =>
          r.verb === "watch" || (r.verb === "list" && r.resource === "nodes")
        );
        assert.ok(others.length >= 1);
        for (const r of others) assert.equal(r.accept, "application/json", r.url);
      });
    },
  );
}
