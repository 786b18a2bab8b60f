import assert from "node:assert/strict";
import { findXzPayload, isElf } from "../../../scripts/ipvs_vm/mod.ts";

Deno.test("findXzPayload() finds the first XZ stream header inside a kernel image", () => {
  const image = new Uint8Array([1, 2, 0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00, 9, 0xfd, 0x37]);
  assert.equal(findXzPayload(image), 2);
  assert.equal(findXzPayload(new Uint8Array([0xfd, 0x37, 0x7a, 0x58, 0x5a])), -1);
});

Deno.test("isElf() accepts only the ELF magic", () => {
  assert.ok(isElf(new Uint8Array([0x7f, 0x45, 0x4c, 0x46, 2])));
  assert.ok(!isElf(new Uint8Array([0x4d, 0x5a, 0, 0])));
});
