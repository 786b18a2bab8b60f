import assert from "node:assert/strict";
import { ruleTarget } from "../../lib/netfilter/mod.ts";
import { ruleComment, ruleWords } from "../../lib/netfilter/_tokenize.ts";

Deno.test("ruleWords() keeps quoted comments as one word", () => {
  const spec = '-m comment --comment "a b \\" c" -j X';
  assert.deepEqual(ruleWords(spec), ["-m", "comment", "--comment", '"a b \\" c"', "-j", "X"]);
  assert.equal(ruleTarget(spec), "X");
  assert.equal(
    ruleComment('-m comment --comment "kubernetes service portals" -g Y'),
    "kubernetes service portals",
  );
  assert.equal(ruleTarget("-s 10.0.0.1"), null);
});

Deno.test("ruleWords() runs an unclosed quote to the end of the line", () => {
  assert.deepEqual(ruleWords('-m comment --comment "open -j X'), [
    "-m",
    "comment",
    "--comment",
    '"open -j X',
  ]);
});
