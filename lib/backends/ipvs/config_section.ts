/**
 * IPVS mode's config section (`ipvs:` in the file, the `--ipvs-*` flags): its defaults, and what
 * lib/config checks of it when IPVS is the chosen mode. Small on purpose: the registry loads it at start-up.
 */
import {
  DEFAULT_SYNC_PERIOD_MS,
  fieldSpec as f,
  flagSpec as flag,
  formatDuration,
  type ModeConfigSection,
  type ValidationIssue,
} from "../../config/mod.ts";
import { parseCIDR } from "../../net/mod.ts";

const C = "config" as const;
const ZERO = { zeroMeansDefault: true } as const;

/** IPVS schedulers upstream accepts ("" means the default, rr). */
export const IPVS_SCHEDULERS = ["rr", "wrr", "lc", "wlc", "lblc", "lblcr", "sh", "dh", "sed", "nq"];

/**
 * The ipvs section: its sync periods are the `--ipvs-*` flags; timeouts, CIDRs and scheduler. No
 * minimum sync period and no timeouts by default ("" scheduler is rr, 0 timeouts leave the
 * kernel's), as upstream.
 */
export const ipvsConfigSection: ModeConfigSection<"ipvs"> = {
  flagPrefix: "--ipvs",
  schema: {
    syncPeriod: f("duration", "ipvs.syncPeriodMs", ZERO),
    minSyncPeriod: f("duration", "ipvs.minSyncPeriodMs"),
    scheduler: f("string", "ipvs.scheduler"),
    excludeCIDRs: f("stringList", "ipvs.excludeCIDRs"),
    strictARP: f("bool", "ipvs.strictARP"),
    tcpTimeout: f("duration", "ipvs.tcpTimeoutMs"),
    tcpFinTimeout: f("duration", "ipvs.tcpFinTimeoutMs"),
    udpTimeout: f("duration", "ipvs.udpTimeoutMs"),
  },
  // deno-fmt-ignore
  flags: [
    flag("ipvs-exclude-cidrs", "list", C, "", "ipvs.excludeCIDRs",
      "Comma-separated CIDRs whose IPVS rules cleanup leaves alone."),
    flag("ipvs-min-sync-period", "duration", C, "0s", "ipvs.minSyncPeriodMs",
      "Least time between rule syncs in ipvs mode (0 syncs on every change)."),
    flag("ipvs-scheduler", "string", C, "", "ipvs.scheduler",
      "IPVS scheduler (rr, wrr, lc, wlc, lblc, lblcr, sh, dh, sed, nq); empty means rr."),
    flag("ipvs-strict-arp", "bool", C, "false", "ipvs.strictARP",
      "Set arp_ignore=1 and arp_announce=2 so kube-ipvs0 addresses are not announced."),
    flag("ipvs-sync-period", "duration", C, "30s", "ipvs.syncPeriodMs",
      "Most time between full rule syncs in ipvs mode; greater than 0."),
    flag("ipvs-tcp-timeout", "duration", C, "0s", "ipvs.tcpTimeoutMs",
      "IPVS timeout of idle TCP connections (0 leaves it as is)."),
    flag("ipvs-tcpfin-timeout", "duration", C, "0s", "ipvs.tcpFinTimeoutMs",
      "IPVS timeout of TCP connections after a FIN (0 leaves it as is)."),
    flag("ipvs-udp-timeout", "duration", C, "0s", "ipvs.udpTimeoutMs",
      "IPVS timeout of UDP flows (0 leaves it as is)."),
  ],
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
