import assert from "node:assert/strict";
import { splitListText } from "../../lib/k8s/_list_items.ts";
import { stripManagedFields } from "../../lib/k8s/_strip_managed_fields.ts";
import type { KubeObject } from "../../lib/k8s/watch_lines.ts";

/** Every item of a split, decoded. */
function items(text: string): unknown[] {
  const list = splitListText(text);
  return Array.from({ length: list.count }, (_, i) => list.item(i));
}

/** `value` as the reflector keeps it: an object item without metadata.managedFields. */
function stripped(value: unknown): unknown {
  const metadata = (value as { metadata?: unknown } | null)?.metadata;
  if (typeof metadata !== "object" || metadata === null || Array.isArray(metadata)) return value;
  return stripManagedFields(value as KubeObject);
}

/**
 * A split must agree with JSON.parse on the rest, and on the items as the reflector keeps them;
 * and no item may still hold a managedFields array or object.
 */
function assertAgrees(text: string): void {
  const whole = JSON.parse(text);
  const list = splitListText(text);
  const split = items(text);
  assert.deepEqual(split.map(stripped), whole.items.map(stripped), text);
  for (const item of split) {
    const managed = (item as { metadata?: { managedFields?: unknown } })?.metadata?.managedFields;
    assert.ok(typeof managed !== "object" || managed === null, text);
  }
  assert.deepEqual({ ...list.rest, items: whole.items }, whole, text);
}

Deno.test("splitListText() finds the items of a kube-apiserver list answer", () => {
  const answer = {
    kind: "EndpointSliceList",
    apiVersion: "discovery.k8s.io/v1",
    metadata: { resourceVersion: "1234", continue: "abc" },
    items: [
      { metadata: { name: "a", labels: { x: "}]" } }, endpoints: [{ addresses: ["10.0.0.1"] }] },
      { metadata: { name: "b" }, ports: [] },
    ],
  };
  const text = JSON.stringify(answer);
  const list = splitListText(text);
  assert.equal(list.count, 2);
  assert.deepEqual(list.rest, { ...answer, items: [] });
  assert.deepEqual(list.item(1), answer.items[1]);
  assertAgrees(JSON.stringify(answer, null, 2));
});

Deno.test("splitListText() is not misled by strings, escapes or nested items keys", () => {
  for (
    const text of [
      '{"items":[]}',
      '{"items":[ ]  ,"metadata":{}}',
      '{"metadata":{"items":[1,2]},"items":[{"items":[3]}]}',
      '{"kind":"items","x":["items"],"items":[{"a":"\\"]},{"}, {"b":"\\\\"}, {"c":"\\\\\\"["}]}',
      '{"items":[1, "two", null, true, [3, {"k": [4]}], {"u":"\\u00e9\\ud83d\\ude00 é 😀"}]}',
      ' \n{ "items" :\n[ {"a" : 1} ,\r\n\t{"b" : 2} ] } \n',
      '{"items":[{"a":1}],"items":[{"b":2},{"c":3}]}',
      '{"items":[{"a":1}],"items":null}',
      '{"\\u0069tems":[{"a":1}]}',
      '{"items":"[{}]"}',
    ]
  ) {
    const whole = JSON.parse(text);
    const list = splitListText(text);
    if (Array.isArray(whole.items)) assertAgrees(text);
    else assert.deepEqual(list.rest.items, whole.items, text);
  }
});

Deno.test("splitListText() agrees with JSON.parse on generated lists", () => {
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const pieces = ['"', "\\", "{", "}", "[", "]", ",", ":", "items", "é", "\n", "a", " "];
  const text = (): string =>
    Array.from(
      { length: Math.floor(random() * 6) },
      () => pieces[Math.floor(random() * pieces.length)],
    ).join("");
  const value = (depth: number): unknown => {
    const r = random();
    if (depth > 3 || r < 0.3) return text();
    if (r < 0.4) return Math.floor(random() * 1000) - 500;
    if (r < 0.45) return null;
    if (r < 0.7) return Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1));
    const out: Record<string, unknown> = {};
    for (let i = Math.floor(random() * 4); i > 0; i--) out[text()] = value(depth + 1);
    return out;
  };
  for (let n = 0; n < 300; n++) {
    const answer: Record<string, unknown> = { [text()]: value(1) };
    answer.items = Array.from({ length: Math.floor(random() * 5) }, () => {
      const item = value(1);
      if (random() < 0.5 || typeof item !== "object" || item === null || Array.isArray(item)) {
        return item;
      }
      // An object item gets a metadata with a managedFields member among other keys.
      const metadata: Record<string, unknown> = {};
      const members = Math.floor(random() * 3);
      const at = Math.floor(random() * (members + 1));
      for (let m = 0; m <= members; m++) {
        if (m === at) metadata.managedFields = random() < 0.8 ? [value(2)] : value(2);
        else metadata[`k${m}`] = value(2);
      }
      return { ...item, metadata };
    });
    answer.metadata = { resourceVersion: text() };
    assertAgrees(JSON.stringify(answer, null, n % 3));
  }
});

Deno.test("splitListText() rejects what JSON.parse rejects", () => {
  for (
    const text of [
      '{"items":[{"a":1} {"b":2}]}',
      '{"items":[{"a":1},]}',
      '{"items":[,{"a":1}]}',
      '{"items":[{"a":1},,{"b":2}]}',
      '{"items":[{"a":1]}]}',
      '{"items":[{"a":"1}]}',
      '{"items":[{"a":1}]',
      '{"items":[{"a":1}]} x',
      '{"items" [{"a":1}]}',
      '{"items":[{"a":1}] "b":2}',
      '{"items":[{"a":01}]}',
      "",
    ]
  ) {
    assert.throws(() => items(text), SyntaxError, text);
  }
});

Deno.test("splitListText() leaves metadata.managedFields out of the items it decodes", () => {
  const managedFields = [{ manager: "kubectl", fieldsV1: { "f:spec": { 'k:{"port":80}': {} } } }];
  const answers = [
    { metadata: { managedFields, name: "first", labels: { a: "b" } } },
    { metadata: { name: "middle", managedFields, uid: "u" }, spec: { x: 1 } },
    { spec: { x: 1 }, metadata: { name: "last", managedFields } },
    { metadata: { managedFields } },
    { metadata: { name: "object", managedFields: { "f:x": {} } } },
  ];
  for (const indent of [0, 2]) {
    const text = JSON.stringify({ kind: "List", items: answers }, null, indent);
    const list = splitListText(text);
    assert.deepEqual(
      Array.from({ length: list.count }, (_, i) => list.item(i)),
      [
        { metadata: { name: "first", labels: { a: "b" } } },
        { metadata: { name: "middle", uid: "u" }, spec: { x: 1 } },
        { spec: { x: 1 }, metadata: { name: "last" } },
        { metadata: {} },
        { metadata: { name: "object" } },
      ],
    );
  }
});

Deno.test("splitListText() cuts only the metadata's own managedFields member", () => {
  const kept = [
    // Not metadata's: a label, an annotation's text, a nested object's metadata, a field of spec.
    { metadata: { name: "a", labels: { managedFields: "x" } } },
    { metadata: { name: "b", annotations: { note: '"managedFields":[]' } } },
    { metadata: { name: "c" }, spec: { template: { metadata: { managedFields: [1] } } } },
    { metadata: { name: "d" }, managedFields: [2] },
    // A value that is neither array nor object is left for stripManagedFields.
    { metadata: { name: "e", managedFields: null } },
  ];
  const text = JSON.stringify({ items: kept });
  const list = splitListText(text);
  assert.deepEqual(Array.from({ length: list.count }, (_, i) => list.item(i)), kept);
  // A key written with escapes is not recognised: decoded as it is, stripped later.
  const escaped = splitListText('{"items":[{"metadata":{"\\u006danagedFields":[1],"name":"f"}}]}');
  assert.deepEqual(escaped.item(0), { metadata: { managedFields: [1], name: "f" } });
});

Deno.test("splitListText() does not decode a cut managedFields value; its strings must still close", () => {
  const list = splitListText('{"items":[{"metadata":{"managedFields":[1,,{"x":}],"name":"a"}}]}');
  assert.deepEqual(list.item(0), { metadata: { name: "a" } });
  assert.throws(
    () => splitListText('{"items":[{"metadata":{"managedFields":["a],"name":"a"}}]}'),
    SyntaxError,
  );
});
