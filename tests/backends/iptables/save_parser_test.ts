import assert from "node:assert/strict";
import {
  parseIptablesSave,
  ruleComment,
  ruleTarget,
  tokenizeRule,
} from "../../../lib/backends/iptables/mod.ts";

Deno.test("parseIptablesSave() reads tables, chains and rules", () => {
  const tables = parseIptablesSave(
    "# Generated\n*nat\n:PREROUTING ACCEPT [1:2]\n:KUBE-SERVICES - [0:0]\n-A PREROUTING -j KUBE-SERVICES\nCOMMIT\n",
  );
  const nat = tables.get("nat")!;
  assert.deepEqual([...nat.chains.values()].map((c) => [c.name, c.builtin]), [
    ["PREROUTING", true],
    [
      "KUBE-SERVICES",
      false,
    ],
  ]);
  assert.deepEqual(nat.rules, [{ chain: "PREROUTING", spec: "-j KUBE-SERVICES" }]);
});

Deno.test("tokenizeRule() keeps quoted comments as one word", () => {
  const spec = '-m comment --comment "a b \\" c" -j X';
  assert.deepEqual(tokenizeRule(spec), ["-m", "comment", "--comment", '"a b \\" c"', "-j", "X"]);
  assert.equal(ruleTarget(spec), "X");
  assert.equal(
    ruleComment('-m comment --comment "kubernetes service portals" -g Y'),
    "kubernetes service portals",
  );
  assert.equal(ruleTarget("-s 10.0.0.1"), null);
});
