import assert from "node:assert/strict";
import {
  parseStamp,
  stampElements,
  TableStamp,
  textHash,
} from "../../../lib/backends/nftables/_table_stamp.ts";

Deno.test("TableStamp.toggleElement() hashes exactly as toggle() of the element's text", () => {
  const elements = [
    ["service-ips", "172.30.0.10 . tcp . 80", " : goto service-tcp-2"],
    ["endpoints", "172.30.0.10 . 80 . 1", " : 10.0.0.2 . 8080"],
    ["no-endpoint-services", "fd00:30::52 . tcp . 80", ' comment "ns/svc:p\u00e9" : drop'],
    ["cluster-ips", "172.30.0.10", ""],
  ] as const;
  const byText = new TableStamp();
  const byParts = new TableStamp();
  for (const [set, key, rest] of elements) {
    byText.toggle(`e\u0000${set}\u0000${key}${rest}`);
    byParts.toggleElement(set, key, rest);
    assert.deepEqual(byParts.halves(), byText.halves());
  }
  // XOR: toggling everything out again leaves the empty stamp.
  for (const [set, key, rest] of elements) byParts.toggleElement(set, key, rest);
  assert.deepEqual(byParts.halves(), [0, 0]);
  assert.notDeepEqual(textHash("a"), textHash("b"));
});

Deno.test("stampElements() and parseStamp() round-trip through the map's listing", () => {
  const halves = [0x57d6bfde, 0x00000001] as const;
  const listing = `map sync-stamp {\n\telements = { ${stampElements(halves)} }\n}`;
  assert.deepEqual(parseStamp(listing), halves);
  assert.equal(parseStamp("map sync-stamp {\n}"), null);
});
