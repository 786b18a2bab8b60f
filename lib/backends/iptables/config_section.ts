/**
 * iptables mode's config section (`iptables:` in the file, the `--iptables-*` flags). Small on
 * purpose: the registry loads it at start-up.
 */
import {
  DEFAULT_MIN_SYNC_PERIOD_MS,
  DEFAULT_SYNC_PERIOD_MS,
  type ModeConfigSection,
} from "../../config/mod.ts";

/**
 * The iptables section: lib/config checks its sync periods, and its masquerade bit in every mode
 * (IPVS mode masquerades with it too), so nothing is left to check here. Its defaults are
 * upstream's, masquerade bit 14 included.
 */
export const iptablesConfigSection: ModeConfigSection<"iptables"> = {
  flagPrefix: "--iptables",
  defaults: () => ({
    masqueradeBit: 14,
    masqueradeAll: false,
    localhostNodePorts: true,
    syncPeriodMs: DEFAULT_SYNC_PERIOD_MS,
    minSyncPeriodMs: DEFAULT_MIN_SYNC_PERIOD_MS,
  }),
  check: () => [],
};
