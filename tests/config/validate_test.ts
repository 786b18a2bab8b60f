import assert from "node:assert/strict";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { defaultConfig, type ProxyConfig, validateConfig } from "../../lib/config/mod.ts";

const validate = (c: ProxyConfig) => validateConfig(c, { modeSections: MODE_CONFIG_SECTIONS });

Deno.test("validateConfig() accepts the defaults", () => {
  assert.deepEqual(validate(defaultConfig({ modeSections: MODE_CONFIG_SECTIONS })), []);
});

Deno.test("validateConfig() checks the chosen mode's section with its sync period flags", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.ipvs.syncPeriodMs = 0;
  c.nftables.minSyncPeriodMs = -1;
  assert.deepEqual(validate(c), []);
  c.mode = "ipvs";
  assert.deepEqual(validate(c).map((i) => [i.field, i.flag]), [
    ["ipvs.syncPeriod", "--ipvs-sync-period"],
  ]);
  c.mode = "nftables";
  assert.deepEqual(validate(c).map((i) => [i.field, i.flag]), [
    ["nftables.minSyncPeriod", "--iptables-min-sync-period"],
  ]);
});

Deno.test("validateConfig() checks the iptables masquerade bit in every mode", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.iptables.masqueradeBit = 32;
  for (const mode of ["iptables", "ipvs", "nftables"] as const) {
    c.mode = mode;
    assert.deepEqual(validate(c).map((i) => i.flag), ["--iptables-masquerade-bit"]);
  }
});

Deno.test("validateConfig() requires host:port bind addresses but allows disabling them", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.healthzBindAddress = "";
  c.metricsBindAddress = "[::1]:10249";
  assert.deepEqual(validate(c), []);
  c.metricsBindAddress = "127.0.0.1:0";
  c.healthzBindAddress = "0.0.0.0";
  assert.deepEqual(validate(c).map((i) => i.flag), [
    "--healthz-bind-address",
    "--metrics-bind-address",
  ]);
});

Deno.test("validateConfig() allows a zero minimum sync period and equal periods", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.iptables.minSyncPeriodMs = 0;
  assert.deepEqual(validate(c), []);
  c.iptables.minSyncPeriodMs = 30_000;
  assert.deepEqual(validate(c), []);
});

Deno.test("validateConfig() accepts a dual-stack cluster CIDR pair and primary node ports", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.clusterCIDRs = ["fd00::/48", "10.0.0.0/8"];
  c.nodePortAddresses = ["primary"];
  assert.deepEqual(validate(c), []);
});
