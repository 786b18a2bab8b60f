import assert from "node:assert/strict";
import { createIptablesProxier } from "../../../lib/backends/iptables/proxier.ts";
import { renderIptables, renderIptablesSlices } from "../../../lib/backends/iptables/render.ts";
import {
  buildRestorePayload,
  emptyNodePlan,
} from "../../../lib/backends/iptables/restore_payload.ts";
import { type OwnedLine } from "../../../lib/backends/iptables/rule_buffer.ts";
import type { CommandRunner } from "../../../lib/exec/mod.ts";
import { createMemoryLogger } from "../../../lib/log/mod.ts";
import { createFakeIptables } from "../../support/fake_iptables.ts";
import { ep, sps, state, svc, variedServicePorts } from "./state_fixtures.ts";

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

/**
 * A proxier over the fake whose restore notes, when it reads its first piece of input, whether
 * the render had already finished (the proxier logs "Reloading service iptables data" then).
 */
function watchedProxier() {
  const fake = createFakeIptables();
  const logger = createMemoryLogger();
  const firstPieceAfterRender: boolean[] = [];
  const rendered = () => logger.lines.some((l) => l.includes("Reloading service iptables data"));
  const runner: CommandRunner = async (input) => {
    const stream = input.stdinStream;
    if (stream === undefined) return await fake.run(input);
    let first = true;
    const watched = async function* () {
      for await (const piece of stream) {
        if (first) firstPieceAfterRender.push(rendered());
        first = false;
        yield piece;
      }
    };
    logger.lines.length = 0;
    return await fake.run({ ...input, stdinStream: watched() });
  };
  const proxier = createIptablesProxier({ family: "IPv4", flavour: "legacy", runner, logger });
  return { proxier, firstPieceAfterRender };
}

function endpointsState(services: number, endpointsEach: number) {
  const ports = [];
  for (let i = 0; i < services; i++) {
    const endpoints = [];
    for (let k = 0; k < endpointsEach; k++) endpoints.push(ep(`10.${i >> 8}.${i & 255}.${k + 1}`));
    ports.push(sps(svc({ name: `s${i}`, clusterIP: `172.30.${i >> 8}.${i & 255}` }), endpoints));
  }
  return state(ports);
}

Deno.test("a first render small enough is streamed: the restore reads the nat header before the render ends", async () => {
  const { proxier, firstPieceAfterRender } = watchedProxier();
  await proxier.sync(endpointsState(300, 10));
  await proxier.sync({ ...endpointsState(300, 10), forceFullSync: true });
  assert.deepEqual(firstPieceAfterRender, [false, false]);
});

Deno.test("a first render of more than 30,000 endpoints is made whole before the restore reads any input", async () => {
  const { proxier, firstPieceAfterRender } = watchedProxier();
  const big = endpointsState(1_510, 20);
  assert.ok(big.totalEndpoints > 30_000);
  await proxier.sync(big);
  assert.deepEqual(firstPieceAfterRender, [true]);
});
