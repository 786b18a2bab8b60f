import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { CommandFailure } from "../../lib/app/command_failure.ts";
import { renderCommand } from "../../lib/app/commands.ts";
import { defaultConfig } from "../../lib/config/mod.ts";
import { silentLogger } from "../../lib/log/mod.ts";

const examples = new URL("../../deploy/examples", import.meta.url).pathname;

Deno.test("renderCommand() prints the iptables-restore input for deploy/examples without touching the kernel", async () => {
  const config = {
    ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
    manifests: examples,
    hostnameOverride: "node1",
    clusterCIDRs: ["10.0.0.0/8"],
  };
  const out = await renderCommand(config, silentLogger);
  assert.match(out, /^# IPv4: input for iptables-restore --noflush$/m);
  assert.match(out, /^\*nat$/m);
  assert.match(out, /-d 172\.30\.0\.10 --dport 80 -j KUBE-SVC-/);
  assert.match(out, /DNAT --to-destination 10\.0\.1\.2:8080/);
  assert.match(out, /"demo\/nothing-here:http has no endpoints" .*-j REJECT/);
  assert.match(out, /! -s 10\.0\.0\.0\/8 -j KUBE-MARK-MASQ/);
  assert.doesNotMatch(out, /IPv6/, "no IPv6 services in the examples");
});

Deno.test("renderCommand() without --manifests fails with exit code 1", async () => {
  await assert.rejects(
    () => renderCommand(defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }), silentLogger),
    (err) => err instanceof CommandFailure && err.code === 1 && /--manifests/.test(err.message),
  );
});
