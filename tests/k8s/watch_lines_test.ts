import assert from "node:assert/strict";
import { decodeWatchLine, LineSplitter } from "../../lib/k8s/watch_lines.ts";

const enc = new TextEncoder();

Deno.test("decodeWatchLine() decodes object events, bookmarks and errors", () => {
  const added = decodeWatchLine(
    '{"type":"ADDED","object":{"kind":"Service","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}}',
  );
  assert.deepEqual(added, {
    ok: true,
    event: {
      type: "ADDED",
      object: { kind: "Service", metadata: { name: "a", namespace: "ns", resourceVersion: "7" } },
    },
  });
  const bookmark = decodeWatchLine(
    '{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}',
  );
  assert.equal(bookmark.ok && bookmark.event.type, "BOOKMARK");
  const error = decodeWatchLine(
    '{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired","message":"too old resource version: 1 (5)"}}',
  );
  assert.ok(error.ok && error.event.type === "ERROR");
  assert.equal(error.event.object.code, 410);
});

Deno.test("decodeWatchLine() reports malformed lines with a reason", () => {
  const cases: [string, RegExp][] = [
    ['{"type":"ADDED","object":{"metadata":{"na', /^Invalid JSON/],
    ["[1,2]", /Expected a JSON object/],
    ['{"type":"ADDED"}', /has no object/],
    ['{"type":"MODIFIED","object":{"metadata":{}}}', /without metadata.name/],
    ['{"type":"BOOKMARK","object":{"metadata":{}}}', /without metadata.resourceVersion/],
    ['{"type":"RENAMED","object":{"metadata":{"name":"x"}}}', /Unknown event type "RENAMED"/],
  ];
  for (const [line, reason] of cases) {
    const got = decodeWatchLine(line);
    assert.equal(got.ok, false, line);
    assert.match((got as { reason: string }).reason, reason, line);
  }
});

Deno.test("LineSplitter joins lines split across chunks, even inside a UTF-8 character", () => {
  const s = new LineSplitter();
  const bytes = enc.encode('{"a":"é"}\n\n{"b":2}\r\n{"c"');
  const cut = bytes.indexOf(0xa9); // second byte of é
  assert.deepEqual(s.push(bytes.slice(0, cut)), []);
  assert.deepEqual(s.push(bytes.slice(cut)), ['{"a":"é"}', '{"b":2}']);
  assert.deepEqual(s.push(enc.encode(":3}\n")), ['{"c":3}']);
  assert.deepEqual(s.flush(), []);
  s.push(enc.encode('{"half'));
  assert.deepEqual(s.flush(), ['{"half']);
});

Deno.test("LineSplitter refuses a line longer than its limit", () => {
  const s = new LineSplitter(16);
  assert.throws(() => s.push(enc.encode("x".repeat(17))), RangeError);
  assert.deepEqual(s.push(enc.encode("ok\n")), ["ok"]);
});
