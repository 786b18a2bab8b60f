/**
 * Upstream's defaults (v1alpha1 SetDefaults plus the Linux platform defaults applied at start),
 * and the steps that turn a decoded configuration into the resolved one.
 */
import { ipFamily, joinHostPort } from "../net/mod.ts";
import type { ModeConfigSections, ModeSectionsOptions } from "./mode_section.ts";
import type { ProxyConfig, ProxyModeName } from "./types.ts";

/** Default port of the /healthz server (upstream ports.ProxyHealthzPort). */
export const DEFAULT_HEALTHZ_PORT = 10256;
/** Default port of the /metrics server (upstream ports.ProxyStatusPort). */
export const DEFAULT_METRICS_PORT = 10249;
/** kube-proxy's OOM score adjustment (upstream qos.KubeProxyOOMScoreAdj). */
export const DEFAULT_OOM_SCORE_ADJ = -999;
/** The API content type kube-proxy asks for. */
export const DEFAULT_CONTENT_TYPE = "application/vnd.kubernetes.protobuf";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/** Default sync period of the modes' sections (each section's defaults use it). */
export const DEFAULT_SYNC_PERIOD_MS = 30 * SECOND;
/** Default minimum sync period of the iptables and nftables sections (IPVS mode's is 0). */
export const DEFAULT_MIN_SYNC_PERIOD_MS = 1 * SECOND;
/** Default informer resync period. */
export const DEFAULT_CONFIG_SYNC_PERIOD_MS = 15 * MINUTE;
/** Default log flush frequency (component-base logging). */
export const DEFAULT_FLUSH_FREQUENCY_MS = 5 * SECOND;

/** Each mode's section, as its own defaults() gives it, in the registry's order. */
function modeSectionDefaults(modeSections: ModeConfigSections): Pick<ProxyConfig, ProxyModeName> {
  const modes = Object.keys(modeSections) as ProxyModeName[];
  return Object.fromEntries(modes.map((m) => [m, modeSections[m].defaults()])) as Pick<
    ProxyConfig,
    ProxyModeName
  >;
}

/**
 * A fully defaulted configuration, as upstream kube-proxy starts with before flags and files;
 * each mode's section comes from `options.modeSections`.
 */
export function defaultConfig(options: ModeSectionsOptions): ProxyConfig {
  const config: ProxyConfig = {
    featureGates: {},
    clientConnection: {
      kubeconfig: "",
      acceptContentTypes: "",
      contentType: DEFAULT_CONTENT_TYPE,
      qps: 5,
      burst: 10,
    },
    logging: {
      format: "text",
      verbosity: 0,
      flushFrequencyMs: DEFAULT_FLUSH_FREQUENCY_MS,
      vmodule: [],
      options: {
        text: { splitStream: false, infoBufferSize: "0" },
        json: { splitStream: false, infoBufferSize: "0" },
      },
    },
    hostnameOverride: "",
    bindAddress: "0.0.0.0",
    healthzBindAddress: `0.0.0.0:${DEFAULT_HEALTHZ_PORT}`,
    metricsBindAddress: `127.0.0.1:${DEFAULT_METRICS_PORT}`,
    bindAddressHardFail: false,
    enableProfiling: false,
    showHiddenMetricsForVersion: "",
    mode: "iptables",
    ...modeSectionDefaults(options.modeSections),
    winkernel: {
      networkName: "",
      sourceVip: "",
      enableDSR: false,
      rootHnsEndpointName: "",
      forwardHealthCheckVip: false,
    },
    detectLocalMode: "ClusterCIDR",
    detectLocal: { bridgeInterface: "", interfaceNamePrefix: "" },
    clusterCIDRs: [],
    nodePortAddresses: [],
    oomScoreAdj: DEFAULT_OOM_SCORE_ADJ,
    conntrack: {
      maxPerCore: 32 * 1024,
      min: 128 * 1024,
      tcpEstablishedTimeoutMs: 24 * HOUR,
      tcpCloseWaitTimeoutMs: 1 * HOUR,
      tcpBeLiberal: false,
      udpTimeoutMs: 0,
      udpStreamTimeoutMs: 0,
    },
    configSyncPeriodMs: DEFAULT_CONFIG_SYNC_PERIOD_MS,
    portRange: "",
    windowsRunAsService: false,
    syncPeriodMs: 0,
    minSyncPeriodMs: 0,
    masqueradeAll: false,
    masqueradeBit: 0,
    master: "",
    manifests: "",
    nodeIPs: [],
  };
  resolveModeFields(config, options);
  return config;
}

/** Adds `port` to a bare host ("0.0.0.0", "::") as upstream's AppendPortIfNeeded does. */
export function appendPortIfNeeded(address: string, port: number): string {
  if (address === "") return address;
  const host = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  if (ipFamily(host) === null) return address;
  return joinHostPort(host, port);
}

/**
 * Fills the bind addresses a config file left empty; their defaults follow the family of
 * bindAddress ("[::]:10256" and "[::1]:10249" for IPv6), as upstream's defaulting does.
 */
export function defaultBindAddresses(config: ProxyConfig): void {
  if (config.bindAddress === "") config.bindAddress = "0.0.0.0";
  const v6 = ipFamily(config.bindAddress) === "IPv6";
  config.healthzBindAddress = config.healthzBindAddress === ""
    ? joinHostPort(v6 ? "::" : "0.0.0.0", DEFAULT_HEALTHZ_PORT)
    : appendPortIfNeeded(config.healthzBindAddress, DEFAULT_HEALTHZ_PORT);
  config.metricsBindAddress = config.metricsBindAddress === ""
    ? joinHostPort(v6 ? "::1" : "127.0.0.1", DEFAULT_METRICS_PORT)
    : appendPortIfNeeded(config.metricsBindAddress, DEFAULT_METRICS_PORT);
}

/**
 * Applies the chosen mode's start-up defaulting (its section's resolve(), from
 * `options.modeSections`) and copies its section into the mode-independent fields.
 */
export function resolveModeFields(config: ProxyConfig, options: ModeSectionsOptions): void {
  options.modeSections[config.mode].resolve?.(config);
  // Each mode's section is the field its name keys; a section without masquerade settings (IPVS)
  // takes the iptables section's, as upstream does.
  const section = config[config.mode];
  config.syncPeriodMs = section.syncPeriodMs;
  config.minSyncPeriodMs = section.minSyncPeriodMs;
  const masq = "masqueradeBit" in section ? section : config.iptables;
  config.masqueradeAll = masq.masqueradeAll;
  config.masqueradeBit = masq.masqueradeBit;
}

/**
 * The node's primary IP that `bindAddress` overrides, as upstream's detectNodeIPs reads it: any
 * address but the unspecified ones (0.0.0.0, ::); null when it overrides nothing.
 */
export function primaryNodeIPOverride(bindAddress: string): string | null {
  const family = ipFamily(bindAddress);
  if (family === null) return null;
  const unspecified = family === "IPv4" ? /^0+(\.0+){3}$/ : /^[0:]+$/;
  return unspecified.test(bindAddress) ? null : bindAddress;
}
