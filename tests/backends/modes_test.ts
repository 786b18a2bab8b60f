import {
  leftoverModes,
  loadMode,
  MODE_CONFIG_SECTIONS,
  ModeUnavailableError,
  removeLeftovers,
} from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { iptablesMode } from "../../lib/backends/iptables/mode.ts";
import { createNftablesMode, parseNftVersion } from "../../lib/backends/nftables/mode.ts";
import { PROXY_MODE_NAMES } from "../../lib/backends/modes.ts";
import { defaultConfig } from "../../lib/config/mod.ts";
import { COMMAND_NOT_FOUND, type CommandRunner } from "../../lib/exec/mod.ts";
import { createMemoryLogger, silentLogger } from "../../lib/log/mod.ts";
import { fakeNode, seedEveryMode } from "../support/fake_node.ts";
import { ep, sps, state, svc } from "./iptables/state_fixtures.ts";

const context = (runner: CommandRunner) => ({
  config: defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
  runner,
  logger: silentLogger,
});

Deno.test("loadMode() loads every --proxy-mode, each under its own name", async () => {
  assert.deepEqual([...PROXY_MODE_NAMES].sort(), Object.keys(MODE_CONFIG_SECTIONS).sort());
  for (const name of PROXY_MODE_NAMES) assert.equal((await loadMode(name)).name, name);
  assert.equal((await loadMode("iptables")).startMessage, "Using iptables proxy");
  assert.equal((await loadMode("ipvs")).startMessage, "Using ipvs proxy");
});

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

Deno.test("leftoverModes() is every other mode, in cleanup order (iptables and ipvs clean each other)", () => {
  assert.deepEqual(leftoverModes("nftables"), ["iptables", "ipvs"]);
  assert.deepEqual(leftoverModes("iptables"), ["nftables", "ipvs"]);
  assert.deepEqual(leftoverModes("ipvs"), ["iptables", "nftables"]);
});

Deno.test("starting in iptables mode removes nftables and IPVS leftovers, keeping its own chains", async () => {
  const { ipt, net, run } = fakeNode();
  seedEveryMode(ipt, net);
  // iptables mode's first sync rewrote the chain both modes write.
  ipt.restore("legacy", "IPv4", "*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n");
  const failed = await removeLeftovers("iptables", run, silentLogger);
  assert.deepEqual(failed, []);
  assert.deepEqual([...net.nftTables.keys()], ["inet filter"]);
  assert.ok(!net.ipsets.has("KUBE-CLUSTER-IP"));
  assert.ok(!net.links.has("kube-ipvs0"));
  assert.ok(net.ipsets.has("my-allowlist"));
  assert.match(ipt.save("legacy", "IPv4"), /-A PREROUTING -j KUBE-SERVICES/);
});

Deno.test("starting in nftables mode removes iptables and IPVS leftovers, keeping nftables", async () => {
  const { ipt, net, run } = fakeNode();
  seedEveryMode(ipt, net);
  const logger = createMemoryLogger();
  const failed = await removeLeftovers("nftables", run, logger);
  assert.deepEqual(failed, []);
  assert.doesNotMatch(ipt.save("legacy", "IPv4"), /KUBE-/);
  assert.ok(!net.ipsets.has("KUBE-CLUSTER-IP"));
  assert.ok(net.ipsets.has("my-allowlist"));
  assert.ok(net.nftTables.has("ip kube-proxy"), "its own table stays");
});

/** A node whose `nft` prints `version` and accepts (or refuses) `nft --check`. */
function nftNode(version: string | null, checkOk = true): CommandRunner {
  return ({ cmd, args }) => {
    if (cmd !== "nft" || version === null) {
      return Promise.resolve({ code: COMMAND_NOT_FOUND, stdout: "", stderr: "not found" });
    }
    if (args[0] === "--version") return Promise.resolve({ code: 0, stdout: version, stderr: "" });
    return Promise.resolve(
      checkOk
        ? { code: 0, stdout: "", stderr: "" }
        : { code: 1, stdout: "", stderr: "Error: Could not process rule: No such file" },
    );
  };
}

Deno.test("nftables mode checks nft >= 1.0.1, kernel >= 5.13 and a test table, exit 2 naming what fails", async () => {
  const mode = (release = "6.1.0-56-amd64", skip?: string) =>
    createNftablesMode({ osRelease: () => release, env: () => skip });
  const fails = async (m: ReturnType<typeof mode>, runner: CommandRunner, what: RegExp) =>
    await assert.rejects(
      m.prepare(context(runner)),
      (e) => e instanceof ModeUnavailableError && e.exitCode === 2 && what.test(e.message),
    );
  await fails(mode(), nftNode(null), /nft is not installed/);
  await fails(mode(), nftNode("nftables v1.0.0 (Fearless Fosdick #3)"), /older than v1\.0\.1/);
  await fails(
    mode("5.10.0-28-amd64"),
    nftNode("nftables v1.0.6 (Lester Gooch #5)"),
    /kernel "5\.10/,
  );
  await fails(mode(), nftNode("nftables v1.0.6 (Lester Gooch #5)", false), /nft --check/);
  const ok = await mode("5.10.0-28-amd64", "1").prepare(
    context(nftNode("nftables v1.0.6 (Lester Gooch #5)")),
  );
  assert.deepEqual(ok.families, ["IPv4", "IPv6"]);
  assert.deepEqual(parseNftVersion("nftables v1.1.3 (Commodore Bullmoose #4)"), [1, 1, 3]);
});

Deno.test("nftables mode renders the nft -f script of each family's state", async () => {
  const text = (await loadMode("nftables")).render(
    defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
    [
      state([sps(svc(), [ep("10.180.0.1")])]),
    ],
  );
  assert.match(text, /^# IPv4: input for nft -f -\nadd table ip kube-proxy\n/);
  assert.match(text, /dnat ip addr \. port to/);
  assert.match(text, /service-endpoints-tcp { 172\.30\.0\.41 \. 80 \. 0 : 10\.180\.0\.1 \. 80 }/);
});
