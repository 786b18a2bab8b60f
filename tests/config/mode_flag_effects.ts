/**
 * The effect cases of the mode flags (`--iptables-*`, `--ipvs-*`, `--nftables-*`): the options
 * each mode's renderer and proxier get from them. flag_effects_test.ts runs them with the rest.
 */
import assert from "node:assert/strict";
import { iptablesRenderOptions } from "../../lib/backends/iptables/render_options.ts";
import { ipvsModeOptions } from "../../lib/backends/ipvs/ipvs_options.ts";
import { LB_STATE, parse, refused, render } from "./flag_effect_fixtures.ts";

/** What a flag changes; a failed assertion fails its test. */
export type Effect = () => void | Promise<void>;

/** Each mode flag's effect. */
export const MODE_FLAG_EFFECTS: Record<string, Effect> = {
  "iptables-localhost-nodeports": () =>
    assert.equal(
      iptablesRenderOptions(parse(["--iptables-localhost-nodeports=false"]).config, "IPv4")
        .localhostNodePorts,
      false,
    ),
  "iptables-masquerade-bit": async () =>
    assert.match(
      await render(LB_STATE, ["--iptables-masquerade-bit=5"]),
      /-A KUBE-MARK-MASQ -j MARK --or-mark 0x00000020$/m,
    ),
  "iptables-min-sync-period": () =>
    assert.equal(
      parse(["--proxy-mode=nftables", "--iptables-min-sync-period=3s"]).config.minSyncPeriodMs,
      3000,
    ),
  "iptables-sync-period": () =>
    assert.equal(
      parse(["--proxy-mode=nftables", "--iptables-sync-period=20s"]).config.syncPeriodMs,
      20_000,
    ),
  "ipvs-exclude-cidrs": () =>
    assert.deepEqual(
      ipvsModeOptions(
        parse(["--proxy-mode=ipvs", "--ipvs-exclude-cidrs=10.9.0.0/16"]).config,
        "IPv4",
      ).excludeCIDRs,
      ["10.9.0.0/16"],
    ),
  "ipvs-min-sync-period": () =>
    assert.equal(
      parse(["--proxy-mode=ipvs", "--ipvs-min-sync-period=2s"]).config.minSyncPeriodMs,
      2000,
    ),
  "ipvs-scheduler": () => {
    assert.equal(
      ipvsModeOptions(parse(["--proxy-mode=ipvs", "--ipvs-scheduler=wrr"]).config, "IPv4")
        .scheduler,
      "wrr",
    );
    refused(
      ["--proxy-mode=ipvs", "--ipvs-scheduler=magic"],
      /^Invalid --ipvs-scheduler "magic": expected one of rr/,
    );
  },
  "ipvs-strict-arp": () =>
    assert.equal(parse(["--proxy-mode=ipvs", "--ipvs-strict-arp"]).config.ipvs.strictARP, true),
  "ipvs-sync-period": () =>
    assert.equal(
      parse(["--proxy-mode=ipvs", "--ipvs-sync-period=45s"]).config.syncPeriodMs,
      45_000,
    ),
  "ipvs-tcp-timeout": () =>
    refused(
      ["--proxy-mode=ipvs", "--ipvs-tcp-timeout=-1s"],
      /^Invalid --ipvs-tcp-timeout "-1s": expected a duration of 0 or more/,
    ),
  "ipvs-tcpfin-timeout": () =>
    assert.equal(
      parse(["--proxy-mode=ipvs", "--ipvs-tcpfin-timeout=1m"]).config.ipvs.tcpFinTimeoutMs,
      60_000,
    ),
  "ipvs-udp-timeout": () =>
    assert.equal(
      parse(["--proxy-mode=ipvs", "--ipvs-udp-timeout=10s"]).config.ipvs.udpTimeoutMs,
      10_000,
    ),
};
