/**
 * Upstream's defaults (v1alpha1 SetDefaults plus the Linux platform defaults applied at start),
 * and the steps that turn a decoded configuration into the resolved one.
 */
import { ipFamily, joinHostPort } from "../net/mod.ts";
import type { ProxyConfig } from "./types.ts";

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

/** Default iptables/nftables/ipvs sync period. */
export const DEFAULT_SYNC_PERIOD_MS = 30 * SECOND;
/** Default iptables/nftables minimum sync period (ipvs defaults to 0). */
export const DEFAULT_MIN_SYNC_PERIOD_MS = 1 * SECOND;
/** Default informer resync period. */
export const DEFAULT_CONFIG_SYNC_PERIOD_MS = 15 * MINUTE;
/** Default log flush frequency (component-base logging). */
export const DEFAULT_FLUSH_FREQUENCY_MS = 5 * SECOND;

/** A fully defaulted configuration, as upstream kube-proxy starts with before flags and files. */
export function defaultConfig(): ProxyConfig {
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
    iptables: {
      masqueradeBit: 14,
      masqueradeAll: false,
      localhostNodePorts: true,
      syncPeriodMs: DEFAULT_SYNC_PERIOD_MS,
      minSyncPeriodMs: DEFAULT_MIN_SYNC_PERIOD_MS,
    },
    ipvs: {
      syncPeriodMs: DEFAULT_SYNC_PERIOD_MS,
      minSyncPeriodMs: 0,
      scheduler: "",
      excludeCIDRs: [],
      strictARP: false,
      tcpTimeoutMs: 0,
      tcpFinTimeoutMs: 0,
      udpTimeoutMs: 0,
    },
    nftables: {
      masqueradeBit: 14,
      masqueradeAll: false,
      syncPeriodMs: DEFAULT_SYNC_PERIOD_MS,
      minSyncPeriodMs: DEFAULT_MIN_SYNC_PERIOD_MS,
    },
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
  resolveModeFields(config);
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
 * Copies the chosen mode's section into the mode-independent fields and applies the Linux
 * platform default of nftables mode (NodePorts only on the primary IPs unless configured).
 */
export function resolveModeFields(config: ProxyConfig): void {
  if (config.mode === "nftables" && config.nodePortAddresses.length === 0) {
    config.nodePortAddresses = ["primary"];
  }
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
