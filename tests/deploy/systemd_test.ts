import assert from "node:assert/strict";
import { parseCommandLine } from "../../lib/config/mod.ts";
import { only, readDeployText, readDeployYaml } from "./deploy_files.ts";

const unit = readDeployText("systemd/deno-kube-proxy.service");
const configConf = only(readDeployYaml("kubernetes/daemonset.yaml"), "ConfigMap").data[
  "config.conf"
] as string;

function directive(name: string): string[] {
  return unit.split("\n").filter((l) => l.startsWith(`${name}=`)).map((l) =>
    l.slice(name.length + 1)
  );
}

Deno.test("deno-kube-proxy.service ExecStart is accepted by parseCommandLine()", () => {
  const execStart = directive("ExecStart");
  assert.equal(execStart.length, 1);
  const [binary, ...args] = execStart[0]!.split(/\s+/);
  assert.equal(binary, "/usr/local/bin/deno-kube-proxy");
  // %H is the host name in systemd's specifiers.
  const line = parseCommandLine(args.map((a) => a.replaceAll("%H", "Node-1")), {
    readTextFile: (path) => {
      if (path !== "/var/lib/kube-proxy/config.conf") throw new Error(`Unexpected read "${path}"`);
      return configConf;
    },
    hostname: () => "not-the-node",
  });
  assert.equal(line.command, "run");
  assert.equal(line.config.hostnameOverride, "node-1");
});

Deno.test("deno-kube-proxy.service restarts the proxy after it exits on a config change", () => {
  assert.deepEqual(directive("Restart"), ["always"]);
  assert.deepEqual(directive("KillMode"), []);
});
