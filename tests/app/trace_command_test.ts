/**
 * traceCommand over a stateful fake iptables: agreement, rules that fell behind the cluster
 * state (exit 3 with the difference in words), JSON output and bad input.
 * IP plan: pods 10.0.0.0/8, service IPs 172.30.0.0/16, node 192.168.0.2.
 */
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { CommandFailure } from "../../lib/app/command_failure.ts";
import { traceCommand } from "../../lib/app/trace_command.ts";
import { renderFullRestore } from "../../lib/backends/iptables/restore_payload.ts";
import { defaultConfig, type TraceRequest } from "../../lib/config/mod.ts";
import { createLogger } from "../../lib/log/mod.ts";
import type { ProxyState } from "../../lib/proxy/mod.ts";
import { ep, NODE_IP, sps, state, svc } from "../backends/iptables/state_fixtures.ts";
import { createFakeIptables } from "../support/fake_iptables.ts";

const logger = createLogger({ format: "text", verbosity: 0, write: () => {} });
const config = {
  ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
  hostnameOverride: "node1",
};
const web = svc({ namespace: "default", name: "web", portName: "http", clusterIP: "172.30.0.10" });
const before = state([sps(web, [ep("10.0.1.2", 8080), ep("10.0.2.2", 8080)])]);
const after = state([sps(web, [ep("10.0.2.2", 8080)])]);
const request: TraceRequest = {
  family: "IPv4",
  from: "10.0.0.5",
  to: "172.30.0.10",
  port: 80,
  protocol: "tcp",
  source: "pod",
  output: "text",
  rendered: false,
};

function nodeWith(rules: ProxyState) {
  const fake = createFakeIptables({ missing: ["nft"] });
  fake.restore("legacy", "IPv4", renderFullRestore(rules));
  return fake;
}

function run(fake: ReturnType<typeof nodeWith>, s: ProxyState, r: Partial<TraceRequest> = {}) {
  return traceCommand(config, { ...request, ...r }, {
    runner: fake.run,
    logger,
    listLocalAddresses: () => Promise.resolve([NODE_IP, "127.0.0.1"]),
    loadState: () => Promise.resolve(s),
  });
}

Deno.test("traceCommand() exits 0 and prints the endpoints when the kernel's rules agree", async () => {
  const out = await run(nodeWith(before), before);
  assert.equal(out.code, 0);
  assert.match(out.text, /decision: forward default\/web:http to 2 endpoint\(s\)/);
  assert.match(out.text, /10\.0\.1\.2:8080 +50\.0%/);
  assert.match(out.text, /path: +KUBE-SERVICES -> KUBE-SVC-/);
  assert.match(out.text, /the rules agree with the cluster state/);
});

Deno.test("traceCommand() exits 3 naming an endpoint the rules still use", async () => {
  const out = await run(nodeWith(before), after);
  assert.equal(out.code, 3);
  assert.match(
    out.text,
    /rules send default\/web:http to 10\.0\.1\.2:8080, which is no longer an endpoint/,
  );
  assert.match(
    out.text,
    /rules send 50\.0% of default\/web:http to 10\.0\.2\.2:8080, the cluster state says 100\.0%/,
  );
});

Deno.test("traceCommand() exits 3 when a KUBE-SEP chain lost its DNAT rule, in JSON too", async () => {
  const fake = nodeWith(before);
  const nat = fake.table("legacy", "IPv4", "nat");
  for (const [name, chain] of nat) {
    if (name.startsWith("KUBE-SEP-") && chain.rules.some((r) => r.includes("10.0.1.2:8080"))) {
      chain.rules = chain.rules.filter((r) => !r.includes("DNAT"));
    }
  }
  const out = await run(fake, before, { output: "json" });
  assert.equal(out.code, 3);
  const json = JSON.parse(out.text);
  assert.equal(json.agree, false);
  assert.deepEqual(json.expected.endpoints.map((e: { address: string }) => e.address), [
    "10.0.1.2:8080",
    "10.0.2.2:8080",
  ]);
  assert.ok(
    json.differences.some((d: string) =>
      d.includes("rules never send default/web:http to 10.0.1.2:8080")
    ),
    json.differences.join("\n"),
  );
});

Deno.test("traceCommand() refuses an IPv6 packet on a node without IPv6 addresses", async () => {
  const v6: ProxyState = { ...state([]), family: "IPv6", node: { ...before.node, ips: [] } };
  await assert.rejects(
    traceCommand(config, { ...request, family: "IPv6", from: "fd00::5", to: "fd00:30::a" }, {
      runner: createFakeIptables().run,
      logger,
      listLocalAddresses: () => Promise.resolve(["::1"]),
      loadState: () => Promise.resolve(v6),
    }),
    (e: unknown) =>
      e instanceof CommandFailure && e.code === 1 &&
      e.message ===
        `Invalid --to "fd00:30::a": the node has no IPv6 address; expected an IPv4 address`,
  );
});

Deno.test("traceCommand() tells the source from --from when --source is not given", async () => {
  const config10 = { ...config, clusterCIDRs: ["10.0.0.0/8"] };
  const cases = [[NODE_IP, "a node"], ["10.0.0.5", "a pod"], ["203.0.113.2", "outside the node"]];
  for (const [from, words] of cases) {
    const out = await traceCommand(config10, { ...request, from: from!, source: "auto" }, {
      runner: createFakeIptables().run,
      logger,
      listLocalAddresses: () => Promise.resolve([NODE_IP, "127.0.0.1"]),
      loadState: () => Promise.resolve(before),
    });
    assert.match(out.text, new RegExp(`from ${words} \\(told from --from; --source to choose\\)`));
  }
});
