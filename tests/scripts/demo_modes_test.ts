import assert from "node:assert/strict";
import { DEMO_MODES, parseDemoMode } from "../../scripts/demo_modes.ts";

Deno.test("parseDemoMode() takes the three proxy modes, iptables by default", () => {
  assert.equal(parseDemoMode(undefined), "iptables");
  for (const mode of ["iptables", "ipvs", "nftables"] as const) {
    assert.equal(parseDemoMode(mode), mode);
    assert.equal(typeof DEMO_MODES[mode].show, "function");
    assert.notEqual(DEMO_MODES[mode].noEndpoints, "");
  }
});

Deno.test("parseDemoMode() refuses anything else, naming the value", () => {
  for (const bad of ["userspace", "IPVS", ""]) {
    assert.throws(() => parseDemoMode(bad), (err: Error) => {
      assert.ok(err instanceof RangeError);
      assert.equal(
        err.message,
        `Invalid --proxy-mode "${bad}": expected iptables, ipvs or nftables`,
      );
      return true;
    });
  }
});
