/**
 * iptables mode's config section (`iptables:` in the file, the `--iptables-*` flags). Small on
 * purpose: the registry loads it at start-up.
 */
import type { ModeConfigSection } from "../../config/mod.ts";

/**
 * The iptables section: lib/config checks its sync periods, and its masquerade bit in every mode
 * (IPVS mode masquerades with it too), so nothing is left to check here.
 */
export const iptablesConfigSection: ModeConfigSection<"iptables"> = {
  flagPrefix: "--iptables",
  check: () => [],
};
