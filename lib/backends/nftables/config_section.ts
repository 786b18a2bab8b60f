/**
 * nftables mode's config section (`nftables:` in the file): its defaults, its Linux platform
 * default for NodePort addresses, and what lib/config checks of it when nftables is the chosen
 * mode. Small on purpose: the registry loads it at start-up.
 */
import {
  DEFAULT_MIN_SYNC_PERIOD_MS,
  DEFAULT_SYNC_PERIOD_MS,
  fieldSpec as f,
  type ModeConfigSection,
  type ValidationIssue,
} from "../../config/mod.ts";

const ZERO = { zeroMeansDefault: true } as const;

/**
 * The nftables section: its sync periods are set by the `--iptables-*` flags, as upstream; its
 * masquerade bit has no flag, only the file's field.
 */
export const nftablesConfigSection: ModeConfigSection<"nftables"> = {
  flagPrefix: "--iptables",
  schema: {
    masqueradeBit: f("int32", "nftables.masqueradeBit"),
    masqueradeAll: f("bool", "nftables.masqueradeAll"),
    syncPeriod: f("duration", "nftables.syncPeriodMs", ZERO),
    minSyncPeriod: f("duration", "nftables.minSyncPeriodMs", ZERO),
  },
  flags: [],
  sharedFlagTargets: {
    "iptables-min-sync-period": "nftables.minSyncPeriodMs",
    "iptables-sync-period": "nftables.syncPeriodMs",
    "masquerade-all": "nftables.masqueradeAll",
  },
  defaults: () => ({
    masqueradeBit: 14,
    masqueradeAll: false,
    syncPeriodMs: DEFAULT_SYNC_PERIOD_MS,
    minSyncPeriodMs: DEFAULT_MIN_SYNC_PERIOD_MS,
  }),
  // NodePorts only on the node's primary IPs unless configured, as upstream's platform defaults.
  resolve(config) {
    if (config.nodePortAddresses.length === 0) config.nodePortAddresses = ["primary"];
  },
  check(nftables) {
    const issues: ValidationIssue[] = [];
    const bit = nftables.masqueradeBit;
    if (bit < 0 || bit > 31) {
      issues.push({
        field: "nftables.masqueradeBit",
        value: String(bit),
        expected: "an integer from 0 to 31",
      });
    }
    return issues;
  },
};
