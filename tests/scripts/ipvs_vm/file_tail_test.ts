import assert from "node:assert/strict";
import { FileTail } from "../../../scripts/ipvs_vm/mod.ts";

Deno.test("FileTail reads only what a file gained since the last read", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kvm-tail-" });
  try {
    const tail = new FileTail(`${dir}/out`);
    assert.equal(await tail.read(), "");
    await Deno.writeTextFile(`${dir}/out`, "one\n");
    assert.equal(await tail.read(), "one\n");
    await Deno.writeTextFile(`${dir}/out`, "two\n", { append: true });
    assert.equal(await tail.read(), "two\n");
    assert.equal(await tail.read(), "");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
