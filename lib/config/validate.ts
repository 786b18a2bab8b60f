/**
 * Semantic validation of a merged configuration, following upstream's validation.go: ranges,
 * addresses, CIDRs and the settings each detect-local mode needs.
 */
import { isIP, parseCIDR } from "../net/mod.ts";
import { formatDuration } from "./duration.ts";
import { checkFeatureGates } from "./feature_gates.ts";
import type { ModeConfigSections, ValidationIssue } from "./mode_section.ts";
import type { ProxyConfig, ProxyModeName } from "./types.ts";

export type { ValidationIssue };

/** What validateConfig needs besides the configuration. */
export interface ValidateConfigOptions {
  /** Each mode's config section, from the mode registry. */
  readonly modeSections: ModeConfigSections;
}

/** The only hidden-metrics version a 1.34 binary accepts: the previous minor release. */
const HIDDEN_METRICS_VERSION = "1.33";

/** Linux interface names: at most 15 bytes; iptables' `-i` also reserves "+" as a wildcard. */
function validInterfaceName(name: string, maxLength: number): boolean {
  return /^[A-Za-z0-9_.@:-]+$/.test(name) && name.length <= maxLength;
}

/**
 * The interface settings of the detect-local modes that need one: iptables' `-i` takes 15 bytes,
 * and a prefix leaves one for the "+" wildcard.
 */
const DETECT_LOCAL_INTERFACES = [
  {
    mode: "BridgeInterface",
    field: "bridgeInterface",
    flag: "--pod-bridge-interface",
    maxLength: 15,
    what: "an interface name",
  },
  {
    mode: "InterfaceNamePrefix",
    field: "interfaceNamePrefix",
    flag: "--pod-interface-name-prefix",
    maxLength: 14,
    what: "an interface name prefix",
  },
] as const;

type Push = (field: string, flag: string | undefined, value: unknown, expected: string) => void;

function checkHostPort(push: Push, field: string, flag: string, value: string): void {
  if (value === "") return;
  const m = /^(?:\[([^\]]*)\]|([^:]*)):(\d{1,5})$/.exec(value);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || host === undefined || !isIP(host) || port < 1 || port > 65535) {
    push(field, flag, value, 'an IP:port such as "0.0.0.0:10256" with a port from 1 to 65535');
  }
}

/**
 * The chosen mode's section: the sync periods every section has, then the section's own checks,
 * which the mode's folder supplies.
 */
function checkModeSection(
  issues: ValidationIssue[],
  push: Push,
  config: ProxyConfig,
  sections: ModeConfigSections,
): void {
  // Each mode's section is the field its name keys.
  const section = config.mode;
  const { flagPrefix } = sections[section];
  const { syncPeriodMs, minSyncPeriodMs } = config[section];
  if (syncPeriodMs <= 0) {
    push(
      `${section}.syncPeriod`,
      `${flagPrefix}-sync-period`,
      formatDuration(syncPeriodMs),
      "a duration greater than 0",
    );
  }
  if (minSyncPeriodMs < 0) {
    push(
      `${section}.minSyncPeriod`,
      `${flagPrefix}-min-sync-period`,
      formatDuration(minSyncPeriodMs),
      "a duration of 0 or more",
    );
  } else if (syncPeriodMs > 0 && minSyncPeriodMs > syncPeriodMs) {
    push(
      `${section}.minSyncPeriod`,
      `${flagPrefix}-min-sync-period`,
      formatDuration(minSyncPeriodMs),
      `a duration no longer than the sync period "${formatDuration(syncPeriodMs)}"`,
    );
  }
  issues.push(...sectionIssues(section, config, sections));
}

function sectionIssues<M extends ProxyModeName>(
  mode: M,
  config: ProxyConfig,
  sections: ModeConfigSections,
): ValidationIssue[] {
  return sections[mode].check(config[mode]);
}

function checkDurations(push: Push, config: ProxyConfig): void {
  if (config.configSyncPeriodMs <= 0) {
    push(
      "configSyncPeriod",
      "--config-sync-period",
      formatDuration(config.configSyncPeriodMs),
      "a duration greater than 0",
    );
  }
  const ct = config.conntrack;
  const nonNegative: Array<[string, string, number]> = [
    [
      "conntrack.tcpEstablishedTimeout",
      "--conntrack-tcp-timeout-established",
      ct.tcpEstablishedTimeoutMs,
    ],
    [
      "conntrack.tcpCloseWaitTimeout",
      "--conntrack-tcp-timeout-close-wait",
      ct.tcpCloseWaitTimeoutMs,
    ],
    ["conntrack.udpTimeout", "--conntrack-udp-timeout", ct.udpTimeoutMs],
    ["conntrack.udpStreamTimeout", "--conntrack-udp-timeout-stream", ct.udpStreamTimeoutMs],
  ];
  for (const [field, flag, ms] of nonNegative) {
    if (ms < 0) push(field, flag, formatDuration(ms), "a duration of 0 or more");
  }
}

function checkNumbers(push: Push, config: ProxyConfig): void {
  const bit = (field: string, flag: string | undefined, v: number) => {
    if (v < 0 || v > 31) push(field, flag, v, "an integer from 0 to 31");
  };
  // Checked in every mode: IPVS mode masquerades with the iptables section's bit too.
  bit("iptables.masqueradeBit", "--iptables-masquerade-bit", config.iptables.masqueradeBit);
  if (config.oomScoreAdj < -1000 || config.oomScoreAdj > 1000) {
    push("oomScoreAdj", "--oom-score-adj", config.oomScoreAdj, "an integer from -1000 to 1000");
  }
  if (config.conntrack.maxPerCore < 0) {
    push(
      "conntrack.maxPerCore",
      "--conntrack-max-per-core",
      config.conntrack.maxPerCore,
      "an integer of 0 or more",
    );
  }
  if (config.conntrack.min < 0) {
    push("conntrack.min", "--conntrack-min", config.conntrack.min, "an integer of 0 or more");
  }
  if (config.clientConnection.burst < 0) {
    push(
      "clientConnection.burst",
      "--kube-api-burst",
      config.clientConnection.burst,
      "an integer of 0 or more",
    );
  }
}

function checkCIDRs(push: Push, config: ProxyConfig): void {
  const cidrs = config.clusterCIDRs;
  const families = cidrs.map((c) => parseCIDR(c)?.family);
  const joined = cidrs.join(",");
  if (families.some((f) => f === undefined)) {
    push(
      "clusterCIDR",
      "--cluster-cidr",
      joined,
      'CIDRs such as "10.0.0.0/8" or "10.0.0.0/8,fd00::/48"',
    );
  } else if (cidrs.length > 2 || (cidrs.length === 2 && families[0] === families[1])) {
    push("clusterCIDR", "--cluster-cidr", joined, "at most one IPv4 and one IPv6 CIDR");
  }
  const npa = config.nodePortAddresses;
  if (npa.includes("primary")) {
    if (npa.length !== 1) {
      push(
        "nodePortAddresses",
        "--nodeport-addresses",
        npa.join(","),
        'either CIDRs or the single word "primary"',
      );
    }
  } else {
    for (const c of npa) {
      if (!parseCIDR(c)) {
        push(
          "nodePortAddresses",
          "--nodeport-addresses",
          c,
          'a CIDR such as "192.168.0.0/16" or "primary"',
        );
      }
    }
  }
}

/** Settings kube-proxy honours that this program cannot: refused rather than ignored. */
function checkUnsupported(issues: ValidationIssue[], config: ProxyConfig): void {
  const refuse = (field: string, flag: string, value: string, reason: string) =>
    issues.push({ field, flag, value, expected: "", reason });
  if (config.enableProfiling) {
    refuse(
      "enableProfiling",
      "--profiling",
      "true",
      "not supported: upstream serves Go's profiler (/debug/pprof), which has no counterpart here; expected false",
    );
  }
  for (const format of ["text", "json"] as const) {
    const options = config.logging.options[format];
    if (options.splitStream) {
      refuse(
        `logging.options.${format}.splitStream`,
        `--log-${format}-split-stream`,
        "true",
        "not supported: every log line goes to stderr; expected false",
      );
    }
    if (!/^[+-]?(0+\.?0*|\.0+)([eE][+-]?\d+|[a-zA-Z]{1,2})?$/.test(options.infoBufferSize)) {
      refuse(
        `logging.options.${format}.infoBufferSize`,
        `--log-${format}-info-buffer-size`,
        options.infoBufferSize,
        "not supported: info messages are never buffered; expected 0",
      );
    }
  }
  if (config.logging.vmodule.length > 0) {
    refuse(
      "logging.vmodule",
      "--vmodule",
      config.logging.vmodule.map((v) => `${v.filePath}=${v.verbosity}`).join(","),
      "not supported: upstream's patterns name its Go source files; expected none (use -v)",
    );
  }
  for (const problem of checkFeatureGates(config.featureGates)) {
    issues.push({
      field: "featureGates",
      flag: "--feature-gates",
      value: problem.entry,
      expected: "",
      reason: problem.message,
    });
  }
}

/**
 * Every problem with `config`, in a stable order; an empty list means it is valid. The chosen
 * mode's section is checked by the section `options.modeSections` gives for it.
 */
export function validateConfig(
  config: ProxyConfig,
  options: ValidateConfigOptions,
): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const push: Push = (field, flag, value, expected) => {
    const v = String(value);
    issues.push(
      flag === undefined ? { field, value: v, expected } : { field, flag, value: v, expected },
    );
  };
  checkNumbers(push, config);
  checkModeSection(issues, push, config, options.modeSections);
  checkDurations(push, config);
  if (!isIP(config.bindAddress)) {
    push("bindAddress", "--bind-address", config.bindAddress, "an IP address");
  }
  checkHostPort(push, "healthzBindAddress", "--healthz-bind-address", config.healthzBindAddress);
  checkHostPort(push, "metricsBindAddress", "--metrics-bind-address", config.metricsBindAddress);
  checkCIDRs(push, config);
  for (const setting of DETECT_LOCAL_INTERFACES) {
    const value = config.detectLocal[setting.field];
    if (config.detectLocalMode === setting.mode && !validInterfaceName(value, setting.maxLength)) {
      push(
        `detectLocal.${setting.field}`,
        setting.flag,
        value,
        `${setting.what} of 1 to ${setting.maxLength} letters, digits or "_.@:-" when the detect-local mode is ${setting.mode}`,
      );
    }
  }
  const hidden = config.showHiddenMetricsForVersion;
  if (hidden !== "" && hidden !== HIDDEN_METRICS_VERSION) {
    push(
      "showHiddenMetricsForVersion",
      "--show-hidden-metrics-for-version",
      hidden,
      `"${HIDDEN_METRICS_VERSION}", the previous minor release`,
    );
  }
  checkUnsupported(issues, config);
  return issues;
}
