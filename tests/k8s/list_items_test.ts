import assert from "node:assert/strict";
import { splitListText } from "../../lib/k8s/_list_items.ts";

/** Every item of a split, decoded. */
function items(text: string): unknown[] {
  const list = splitListText(text);
  return Array.from({ length: list.count }, (_, i) => list.item(i));
}

/** A split must agree with JSON.parse on the items and on the rest. */
function assertAgrees(text: string): void {
  const whole = JSON.parse(text);
  const list = splitListText(text);
  assert.deepEqual(items(text), whole.items, text);
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
    answer.items = Array.from({ length: Math.floor(random() * 5) }, () => value(1));
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
