/**
 * nftables mode's config section (`nftables:` in the file): what lib/config checks of it when
 * nftables is the chosen mode. Small on purpose: the registry loads it at start-up.
 */
import type { ModeConfigSection, ValidationIssue } from "../../config/mod.ts";

/**
 * The nftables section: its sync periods are set by the `--iptables-*` flags, as upstream; its
 * masquerade bit has no flag, only the file's field.
 */
export const nftablesConfigSection: ModeConfigSection<"nftables"> = {
  flagPrefix: "--iptables",
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
