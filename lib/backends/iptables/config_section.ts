/**
 * iptables mode's config section (`iptables:` in the file, the `--iptables-*` flags). Small on
 * purpose: the registry loads it at start-up.
 */
import {
  DEFAULT_MIN_SYNC_PERIOD_MS,
  DEFAULT_SYNC_PERIOD_MS,
  fieldSpec as f,
  flagSpec as flag,
  type ModeConfigSection,
} from "../../config/mod.ts";

const C = "config" as const;
const ZERO = { zeroMeansDefault: true } as const;

/**
 * The iptables section: lib/config checks its sync periods, and its masquerade bit in every mode
 * (IPVS mode masquerades with it too), so nothing is left to check here. Its defaults are
 * upstream's, masquerade bit 14 included.
 */
export const iptablesConfigSection: ModeConfigSection<"iptables"> = {
  flagPrefix: "--iptables",
  schema: {
    masqueradeBit: f("int32", "iptables.masqueradeBit"),
    masqueradeAll: f("bool", "iptables.masqueradeAll"),
    localhostNodePorts: f("bool", "iptables.localhostNodePorts"),
    syncPeriod: f("duration", "iptables.syncPeriodMs", ZERO),
    minSyncPeriod: f("duration", "iptables.minSyncPeriodMs", ZERO),
  },
  // The sync period flags' help names nftables mode too: it shares them (sharedFlagTargets).
  // deno-fmt-ignore
  flags: [
    flag("iptables-localhost-nodeports", "bool", C, "true", "iptables.localhostNodePorts",
      "Accept NodePort traffic to 127.0.0.0/8 (iptables mode, IPv4 only)."),
    flag("iptables-masquerade-bit", "int32", C, "14", "iptables.masqueradeBit",
      "Bit of the fwmark that marks packets for SNAT; 0 to 31."),
    flag("iptables-min-sync-period", "duration", C, "1s", "iptables.minSyncPeriodMs",
      "Least time between rule syncs in iptables and nftables mode (0 syncs on every change)."),
    flag("iptables-sync-period", "duration", C, "30s", "iptables.syncPeriodMs",
      "Most time between full rule syncs in iptables and nftables mode; greater than 0."),
  ],
  sharedFlagTargets: { "masquerade-all": "iptables.masqueradeAll" },
  defaults: () => ({
    masqueradeBit: 14,
    masqueradeAll: false,
    localhostNodePorts: true,
    syncPeriodMs: DEFAULT_SYNC_PERIOD_MS,
    minSyncPeriodMs: DEFAULT_MIN_SYNC_PERIOD_MS,
  }),
  check: () => [],
};
