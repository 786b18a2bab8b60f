import assert from "node:assert/strict";
import { linesText } from "../../../lib/backends/common/mod.ts";

Deno.test("linesText() ends every line with a newline, gives '' for none, and leaves the lines as they were", () => {
  const lines = ["*nat", ":KUBE-SERVICES - [0:0]", "COMMIT"];
  assert.equal(linesText(lines), "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n");
  assert.deepEqual(lines, ["*nat", ":KUBE-SERVICES - [0:0]", "COMMIT"]);
  assert.equal(linesText([""]), "\n");
  assert.equal(linesText([]), "");
});
