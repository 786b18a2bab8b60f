import assert from "node:assert/strict";
import { type CommandRunner, ensureSysctl } from "../../lib/exec/mod.ts";
import { silentLogger } from "../../lib/log/mod.ts";

/** A fake `sysctl` holding kernel values, optionally read-only (as in a restricted container). */
function fakeSysctl(
  values: Map<string, string>,
  readOnly = false,
  procpsExitCode = 255,
): CommandRunner {
  return ({ args }) => {
    if (args[0] === "-n") {
      const v = values.get(args[1]!);
      return Promise.resolve(
        v === undefined
          ? { code: 255, stdout: "", stderr: `sysctl: cannot stat ${args[1]}` }
          : { code: 0, stdout: `${v}\n`, stderr: "" },
      );
    }
    if (readOnly) {
      return Promise.resolve({
        code: procpsExitCode,
        stdout: "",
        stderr: "sysctl: permission denied",
      });
    }
    const [name, value] = args[1]!.split("=");
    values.set(name!, value!);
    return Promise.resolve({ code: 0, stdout: `${name} = ${value}\n`, stderr: "" });
  };
}

const LOCALNET = "net.ipv4.conf.all.route_localnet";
const enableRouteLocalnet = (runner: CommandRunner, logger = silentLogger) =>
  ensureSysctl(runner, LOCALNET, 1, logger);

Deno.test("ensureSysctl() sets a knob and leaves it when already set", async () => {
  const values = new Map([[LOCALNET, "0"]]);
  assert.equal(await enableRouteLocalnet(fakeSysctl(values)), "set");
  assert.equal(values.get(LOCALNET), "1");
  assert.equal(await enableRouteLocalnet(fakeSysctl(values, true)), "unchanged");
});

Deno.test("ensureSysctl() in raise mode leaves a larger value alone", async () => {
  const values = new Map([["net.netfilter.nf_conntrack_max", "262144"]]);
  const raise = (v: number) =>
    ensureSysctl(fakeSysctl(values), "net.netfilter.nf_conntrack_max", v, silentLogger, {
      mode: "raise",
    });
  assert.equal(await raise(131072), "unchanged");
  assert.equal(await raise(524288), "set");
  assert.equal(values.get("net.netfilter.nf_conntrack_max"), "524288");
});

Deno.test("ensureSysctl() reports a failure where /proc/sys is read-only", async () => {
  const values = new Map([[LOCALNET, "0"]]);
  assert.equal(await enableRouteLocalnet(fakeSysctl(values, true)), "failed");
  assert.equal(values.get(LOCALNET), "0");
});

Deno.test("ensureSysctl() reads the value back because procps exits 0 on a read-only key", async () => {
  const values = new Map([[LOCALNET, "0"]]);
  assert.equal(await enableRouteLocalnet(fakeSysctl(values, true, 0)), "failed");
  assert.equal(values.get(LOCALNET), "0");
});
