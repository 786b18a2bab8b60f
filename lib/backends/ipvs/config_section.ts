/**
 * IPVS mode's config section (`ipvs:` in the file, the `--ipvs-*` flags): its defaults, and what
 * lib/config checks of it when IPVS is the chosen mode. Small on purpose: the registry loads it at start-up.
 */
import {
  DEFAULT_SYNC_PERIOD_MS,
  formatDuration,
  type ModeConfigSection,
  type ValidationIssue,
} from "../../config/mod.ts";
import { parseCIDR } from "../../net/mod.ts";

/** IPVS schedulers upstream accepts ("" means the default, rr). */
export const IPVS_SCHEDULERS = ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "sh", "dh", "sed", "nq"];

/**
 * The ipvs section: its sync periods are the `--ipvs-*` flags; timeouts, CIDRs and scheduler. No
 * minimum sync period and no timeouts by default ("" scheduler is rr, 0 timeouts leave the
 * kernel's), as upstream.
 */
export const ipvsConfigSection: ModeConfigSection<"ipvs"> = {
  flagPrefix: "--ipvs",
  defaults: () => ({
    syncPeriodMs: DEFAULT_SYNC_PERIOD_MS,
    minSyncPeriodMs: 0,
    scheduler: "",
    excludeCIDRs: [],
    strictARP: false,
    tcpTimeoutMs: 0,
    tcpFinTimeoutMs: 0,
    udpTimeoutMs: 0,
  }),
  check(ipvs) {
    const issues: ValidationIssue[] = [];
    const timeouts: Array<[string, string, number]> = [
      ["ipvs.tcpTimeout", "--ipvs-tcp-timeout", ipvs.tcpTimeoutMs],
      ["ipvs.tcpFinTimeout", "--ipvs-tcpfin-timeout", ipvs.tcpFinTimeoutMs],
      ["ipvs.udpTimeout", "--ipvs-udp-timeout", ipvs.udpTimeoutMs],
    ];
    for (const [field, flag, ms] of timeouts) {
      if (ms < 0) {
        issues.push({
          field,
          flag,
          value: formatDuration(ms),
          expected: "a duration of 0 or more",
        });
      }
    }
    for (const c of ipvs.excludeCIDRs) {
      if (!parseCIDR(c)) {
        issues.push({
          field: "ipvs.excludeCIDRs",
          flag: "--ipvs-exclude-cidrs",
          value: c,
          expected: 'a CIDR such as "10.0.0.0/8"',
        });
      }
    }
    if (ipvs.scheduler !== "" && !IPVS_SCHEDULERS.includes(ipvs.scheduler)) {
      issues.push({
        field: "ipvs.scheduler",
        flag: "--ipvs-scheduler",
        value: ipvs.scheduler,
        expected: `one of ${IPVS_SCHEDULERS.join(", ")}`,
      });
    }
    return issues;
  },
};
