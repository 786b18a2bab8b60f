import assert from "node:assert/strict";
import { MODE_CONFIG_SECTIONS } from "../../../lib/backends/mod.ts";
import { nftablesConfigSection } from "../../../lib/backends/nftables/config_section.ts";
import { defaultConfig, validateConfig } from "../../../lib/config/mod.ts";

Deno.test("nftablesConfigSection accepts the defaults and shares iptables' sync period flags", () => {
  assert.deepEqual(
    nftablesConfigSection.check(defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }).nftables),
    [],
  );
  assert.equal(nftablesConfigSection.flagPrefix, "--iptables");
});

Deno.test("validateConfig() checks the nftables masquerade bit only in nftables mode", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.nftables.masqueradeBit = 40;
  const validate = () => validateConfig(c, { modeSections: MODE_CONFIG_SECTIONS });
  assert.deepEqual(validate(), []);
  c.mode = "nftables";
  assert.deepEqual(validate(), [
    { field: "nftables.masqueradeBit", value: "40", expected: "an integer from 0 to 31" },
  ]);
});

Deno.test("nftablesConfigSection.resolve() puts NodePorts on the primary IPs unless configured", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  c.nodePortAddresses = [];
  nftablesConfigSection.resolve!(c);
  assert.deepEqual(c.nodePortAddresses, ["primary"]);
  c.nodePortAddresses = ["10.0.0.0/8"];
  nftablesConfigSection.resolve!(c);
  assert.deepEqual(c.nodePortAddresses, ["10.0.0.0/8"]);
});
