import assert from "node:assert/strict";
import { iptablesMode } from "../../lib/backends/iptables/mod.ts";
import {
  cleanupModes,
  leftoverModes,
  ModeUnavailableError,
  PROXY_MODES,
} from "../../lib/backends/mod.ts";
import { defaultConfig } from "../../lib/config/mod.ts";
import { COMMAND_NOT_FOUND, type CommandRunner } from "../../lib/exec/mod.ts";
import { createMemoryLogger, silentLogger } from "../../lib/log/mod.ts";
import { fakeNode, seedEveryMode } from "../support/fake_node.ts";

const context = (runner: CommandRunner) => ({
  config: defaultConfig(),
  runner,
  logger: silentLogger,
});

Deno.test("PROXY_MODES holds every --proxy-mode, each under its own name", () => {
  assert.deepEqual(Object.keys(PROXY_MODES).sort(), ["iptables", "ipvs", "nftables"]);
  for (const [name, mode] of Object.entries(PROXY_MODES)) assert.equal(mode.name, name);
  assert.equal(PROXY_MODES.iptables.startMessage, "Using iptables proxy");
  assert.equal(PROXY_MODES.ipvs.startMessage, "Using ipvs Proxier");
});

for (const name of ["nftables"] as const) {
  Deno.test(`the ${name} mode answers "not built yet" with exit code 1, at start and in render`, async () => {
    const { run } = fakeNode();
    await assert.rejects(
      PROXY_MODES[name].prepare(context(run)),
      (e) => e instanceof ModeUnavailableError && e.exitCode === 1 && e.message.includes(name),
    );
    assert.throws(
      () => PROXY_MODES[name].render(defaultConfig(), []),
      (e) => e instanceof ModeUnavailableError && e.exitCode === 1,
    );
  });
}

Deno.test("iptables mode fails its start check with exit code 2 when no iptables can run", async () => {
  const none: CommandRunner = ({ cmd }) =>
    Promise.resolve({ code: COMMAND_NOT_FOUND, stdout: "", stderr: `${cmd}: command not found` });
  await assert.rejects(
    iptablesMode.prepare(context(none)),
    (e) =>
      e instanceof ModeUnavailableError && e.exitCode === 2 &&
      /Cannot run iptables: iptables-.*command not found/.test(e.message),
  );
});

Deno.test("iptables mode prepares the families and flavour the node has, one backend each", async () => {
  const { run } = fakeNode();
  const prepared = await iptablesMode.prepare(context(run));
  assert.deepEqual(prepared.families, ["IPv4", "IPv6"]);
  assert.ok(["legacy", "nft"].includes(String(prepared.details.flavour)));
  const counted: string[] = [];
  const backends = prepared.createBackends((family) => ({
    applyFailed: () => counted.push(family),
    cleanupFailed: () => {},
    synced: () => {},
  }));
  assert.deepEqual(backends.map((b) => b.family), ["IPv4", "IPv6"]);
});

Deno.test("leftoverModes() follows upstream: nftables cleans iptables and IPVS, the others nftables", () => {
  assert.deepEqual(leftoverModes("nftables"), ["iptables", "ipvs"]);
  assert.deepEqual(leftoverModes("iptables"), ["nftables"]);
  assert.deepEqual(leftoverModes("ipvs"), ["nftables"]);
});

Deno.test("starting in iptables mode removes nftables leftovers and nothing of IPVS", async () => {
  const { ipt, net, run } = fakeNode();
  seedEveryMode(ipt, net);
  const failed = await cleanupModes(leftoverModes("iptables"), run, silentLogger);
  assert.deepEqual(failed, []);
  assert.deepEqual([...net.nftTables.keys()], ["inet filter"]);
  assert.ok(
    net.ipsets.has("KUBE-CLUSTER-IP"),
    "IPVS mode's sets are not iptables mode's to remove",
  );
  assert.match(ipt.save("legacy", "IPv4"), /KUBE-SERVICES/);
});

Deno.test("starting in nftables mode removes iptables and IPVS leftovers, keeping nftables", async () => {
  const { ipt, net, run } = fakeNode();
  seedEveryMode(ipt, net);
  const logger = createMemoryLogger();
  const failed = await cleanupModes(leftoverModes("nftables"), run, logger);
  assert.deepEqual(failed, []);
  assert.doesNotMatch(ipt.save("legacy", "IPv4"), /KUBE-/);
  assert.ok(!net.ipsets.has("KUBE-CLUSTER-IP"));
  assert.ok(net.ipsets.has("my-allowlist"));
  assert.ok(net.nftTables.has("ip kube-proxy"), "its own table stays");
});
