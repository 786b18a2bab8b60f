import assert from "node:assert/strict";
import { MODE_CONFIG_SECTIONS } from "../../../lib/backends/mod.ts";
import { ipvsConfigSection } from "../../../lib/backends/ipvs/config_section.ts";
import { defaultConfig, validateConfig } from "../../../lib/config/mod.ts";

Deno.test("ipvsConfigSection accepts the defaults", () => {
  assert.deepEqual(
    ipvsConfigSection.check(defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }).ipvs),
    [],
  );
});

Deno.test("ipvsConfigSection names each bad timeout, CIDR and scheduler in order", () => {
  const ipvs = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }).ipvs;
  ipvs.tcpTimeoutMs = -1000;
  ipvs.udpTimeoutMs = -2000;
  ipvs.excludeCIDRs = ["10.0.0.0/8", "bad"];
  ipvs.scheduler = "fastest";
  assert.deepEqual(ipvsConfigSection.check(ipvs), [
    {
      field: "ipvs.tcpTimeout",
      flag: "--ipvs-tcp-timeout",
      value: "-1s",
      expected: "a duration of 0 or more",
    },
    {
      field: "ipvs.udpTimeout",
      flag: "--ipvs-udp-timeout",
      value: "-2s",
      expected: "a duration of 0 or more",
    },
    {
      field: "ipvs.excludeCIDRs",
      flag: "--ipvs-exclude-cidrs",
      value: "bad",
      expected: 'a CIDR such as "10.0.0.0/8"',
    },
    {
      field: "ipvs.scheduler",
      flag: "--ipvs-scheduler",
      value: "fastest",
      expected: "one of rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq",
    },
  ]);
});

Deno.test("validateConfig() checks the ipvs section only in ipvs mode", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.ipvs.scheduler = "fastest";
  c.ipvs.syncPeriodMs = 0;
  const validate = () => validateConfig(c, { modeSections: MODE_CONFIG_SECTIONS });
  assert.deepEqual(validate(), []);
  c.mode = "ipvs";
  assert.deepEqual(validate().map((i) => i.field), ["ipvs.syncPeriod", "ipvs.scheduler"]);
});
