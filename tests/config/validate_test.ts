import assert from "node:assert/strict";
import { defaultConfig, validateConfig } from "../../lib/config/mod.ts";

Deno.test("validateConfig() accepts the defaults", () => {
  assert.deepEqual(validateConfig(defaultConfig()), []);
});

Deno.test("validateConfig() checks the ipvs section only in ipvs mode", () => {
  const c = defaultConfig();
  c.ipvs.scheduler = "fastest";
  c.ipvs.syncPeriodMs = 0;
  assert.deepEqual(validateConfig(c), []);
  c.mode = "ipvs";
  assert.deepEqual(validateConfig(c).map((i) => i.field), ["ipvs.syncPeriod", "ipvs.scheduler"]);
});

Deno.test("validateConfig() checks the nftables masquerade bit only in nftables mode", () => {
  const c = defaultConfig();
  c.nftables.masqueradeBit = 40;
  assert.deepEqual(validateConfig(c), []);
  c.mode = "nftables";
  assert.deepEqual(validateConfig(c), [
    { field: "nftables.masqueradeBit", value: "40", expected: "an integer from 0 to 31" },
  ]);
});

Deno.test("validateConfig() requires host:port bind addresses but allows disabling them", () => {
  const c = defaultConfig();
  c.healthzBindAddress = "";
  c.metricsBindAddress = "[::1]:10249";
  assert.deepEqual(validateConfig(c), []);
  c.metricsBindAddress = "127.0.0.1:0";
  c.healthzBindAddress = "0.0.0.0";
  assert.deepEqual(validateConfig(c).map((i) => i.flag), [
    "--healthz-bind-address",
    "--metrics-bind-address",
  ]);
});

Deno.test("validateConfig() allows a zero minimum sync period and equal periods", () => {
  const c = defaultConfig();
  c.iptables.minSyncPeriodMs = 0;
  assert.deepEqual(validateConfig(c), []);
  c.iptables.minSyncPeriodMs = 30_000;
  assert.deepEqual(validateConfig(c), []);
});

Deno.test("validateConfig() accepts a dual-stack cluster CIDR pair and primary node ports", () => {
  const c = defaultConfig();
  c.clusterCIDRs = ["fd00::/48", "10.0.0.0/8"];
  c.nodePortAddresses = ["primary"];
  assert.deepEqual(validateConfig(c), []);
});
