import assert from "node:assert/strict";
import { enableRouteLocalnet } from "../../lib/app/sysctl.ts";
import type { CommandRunner } from "../../lib/exec/mod.ts";
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

Deno.test("enableRouteLocalnet() sets route_localnet=1 and leaves it when already set", async () => {
  const values = new Map([["net.ipv4.conf.all.route_localnet", "0"]]);
  assert.equal(await enableRouteLocalnet(fakeSysctl(values), silentLogger), true);
  assert.equal(values.get("net.ipv4.conf.all.route_localnet"), "1");
  assert.equal(await enableRouteLocalnet(fakeSysctl(values, true), silentLogger), true);
});

Deno.test("enableRouteLocalnet() reports false where /proc/sys is read-only", async () => {
  const values = new Map([["net.ipv4.conf.all.route_localnet", "0"]]);
  assert.equal(await enableRouteLocalnet(fakeSysctl(values, true), silentLogger), false);
  assert.equal(values.get("net.ipv4.conf.all.route_localnet"), "0");
});

Deno.test("enableRouteLocalnet() reads the value back because procps exits 0 on a read-only key", async () => {
  const values = new Map([["net.ipv4.conf.all.route_localnet", "0"]]);
  assert.equal(await enableRouteLocalnet(fakeSysctl(values, true, 0), silentLogger), false);
  assert.equal(values.get("net.ipv4.conf.all.route_localnet"), "0");
});
