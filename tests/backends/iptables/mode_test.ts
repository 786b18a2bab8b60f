import { MODE_CONFIG_SECTIONS } from "../../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { iptablesRenderOptions } from "../../../lib/backends/iptables/render_options.ts";
import { defaultConfig } from "../../../lib/config/mod.ts";

Deno.test("iptablesRenderOptions() passes the detect-local mode and its interface settings on", () => {
  const config = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  config.clusterCIDRs = ["10.0.0.0/8", "fd00:10::/64"];
  config.detectLocalMode = "BridgeInterface";
  config.detectLocal = { bridgeInterface: " cbr0 ", interfaceNamePrefix: "" };
  const v4 = iptablesRenderOptions(config, "IPv4");
  assert.equal(v4.detectLocalMode, "BridgeInterface");
  assert.equal(v4.bridgeInterface, "cbr0");
  assert.deepEqual(v4.clusterCIDRs, ["10.0.0.0/8"]);
  assert.deepEqual(iptablesRenderOptions(config, "IPv6").clusterCIDRs, ["fd00:10::/64"]);
});

Deno.test("iptablesRenderOptions() fails at once on an interface name that cannot go into a rule", () => {
  const config = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  config.detectLocalMode = "InterfaceNamePrefix";
  config.detectLocal = { bridgeInterface: "", interfaceNamePrefix: "veth -j ACCEPT" };
  assert.throws(
    () => iptablesRenderOptions(config, "IPv4"),
    /Invalid interface name prefix "veth -j ACCEPT"/,
  );
});
