import assert from "node:assert/strict";
import {
  buildRestorePayload,
  createIptablesProxier,
  emptyNodePlan,
  type OwnedLine,
  renderIptables,
  renderIptablesSlices,
} from "../../../lib/backends/iptables/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { state, variedServicePorts } from "./state_fixtures.ts";

const OPTIONS = { clusterCIDRs: ["10.0.0.0/8"] };

/** Enough service ports for several slices, with every feature the renderer branches on. */
const STATE = state(variedServicePorts(450));

/** The rules of each chain, in order, among `lines`. */
function rulesByChain(lines: readonly string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of lines) {
    const m = /^-A (\S+) /.exec(line);
    if (m === null) continue;
    const list = out.get(m[1]!) ?? [];
    list.push(line);
    out.set(m[1]!, list);
  }
  return out;
}

function drain(): { slices: OwnedLine[][]; summary: ReturnType<typeof renderIptables> } {
  const gen = renderIptablesSlices(STATE, OPTIONS);
  const slices: OwnedLine[][] = [];
  for (let next = gen.next();; next = gen.next()) {
    if (next.done) {
      return { slices, summary: { ...next.value, natChains: [], natRules: [] } };
    }
    slices.push(next.value);
  }
}

Deno.test("renderIptablesSlices() yields every nat rule renderIptables writes, each chain's in the same order", () => {
  const whole = renderIptables(STATE, OPTIONS);
  const { slices, summary } = drain();
  assert.ok(slices.length > 2, `expected several slices, got ${slices.length}`);
  const streamed = slices.flat().map((l) => l.text);
  const wholeLines = [...whole.natChains, ...whole.natRules].map((l) => l.text);
  assert.deepEqual(rulesByChain(streamed), rulesByChain(wholeLines));
  assert.deepEqual(
    streamed.filter((l) => l.startsWith(":")).sort(),
    whole.natChains.map((l) => l.text).sort(),
  );
  assert.deepEqual(summary.ruleCounts, whole.ruleCounts);
  assert.deepEqual(summary.activeNatChains, whole.activeNatChains);
  assert.deepEqual(summary.filterRules, whole.filterRules);
});

Deno.test("renderIptablesSlices() declares each chain before any rule is added to it or jumps to it", () => {
  const declared = new Set(["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"]);
  for (const line of drain().slices.flat().map((l) => l.text)) {
    if (line.startsWith(":")) {
      declared.add(line.slice(1).split(" ")[0]!);
      continue;
    }
    const chain = /^-A (\S+) /.exec(line)?.[1];
    assert.ok(chain !== undefined && declared.has(chain), `undeclared chain in: ${line}`);
    const target = / -[jg] (KUBE-\S+)/.exec(line)?.[1];
    if (target !== undefined) {
      assert.ok(declared.has(target), `jump before its chain is declared: ${line}`);
    }
  }
});

Deno.test("a streamed full sync leaves the same tables as the whole payload of the same render", async () => {
  const streamedNode = createFakeIptables();
  const proxier = createIptablesProxier({
    family: "IPv4",
    flavour: "legacy",
    runner: streamedNode.run,
    ...OPTIONS,
  });
  const report = await proxier.sync(STATE);
  assert.equal(report.full, true);

  const wholeNode = createFakeIptables();
  const payload = buildRestorePayload(renderIptables(STATE, OPTIONS), emptyNodePlan());
  const out = await wholeNode.run({
    cmd: "iptables-legacy-restore",
    args: ["--noflush", "--counters"],
    stdin: payload,
  });
  assert.equal(out.code, 0, out.stderr);

  for (const table of ["nat", "filter", "mangle"]) {
    assert.equal(
      streamedNode.save("legacy", "IPv4", table),
      wholeNode.save("legacy", "IPv4", table),
      `table ${table}`,
    );
  }
  assert.ok(streamedNode.save("legacy", "IPv4", "nat").includes("-A KUBE-SERVICES"));
});
