/**
 * The internal configuration model: the fields of kube-proxy's v1alpha1 KubeProxyConfiguration in
 * camelCase, durations in milliseconds, plus the values resolved for the chosen mode and our own
 * additions (manifests, node IPs).
 */

/**
 * The proxy modes, by the names `--proxy-mode` and `mode:` take ("" resolves to iptables on
 * Linux): the one union of mode names, which the mode registry (lib/backends/modes.ts) is keyed by.
 */
export type ProxyModeName = "iptables" | "ipvs" | "nftables";

/** How traffic from local pods is recognised (`--detect-local-mode`). */
export type LocalMode = "ClusterCIDR" | "NodeCIDR" | "BridgeInterface" | "InterfaceNamePrefix";

/** Log line encoding, as `--logging-format` accepts. */
export type LoggingFormat = "text" | "json";

/** How the API client talks to the API server (componentbase ClientConnectionConfiguration). */
export interface ClientConnectionConfig {
  kubeconfig: string;
  acceptContentTypes: string;
  contentType: string;
  qps: number;
  burst: number;
}

/** The iptables section; ipvs mode also uses its masquerade bit and masqueradeAll. */
export interface IPTablesConfig {
  masqueradeBit: number;
  masqueradeAll: boolean;
  localhostNodePorts: boolean;
  syncPeriodMs: number;
  minSyncPeriodMs: number;
}

/** The ipvs section; timeouts of 0 leave the kernel's values alone. */
export interface IPVSConfig {
  syncPeriodMs: number;
  minSyncPeriodMs: number;
  /** "" means the runtime default, "rr". */
  scheduler: string;
  excludeCIDRs: string[];
  strictARP: boolean;
  tcpTimeoutMs: number;
  tcpFinTimeoutMs: number;
  udpTimeoutMs: number;
}

/** The nftables section. */
export interface NFTablesConfig {
  masqueradeBit: number;
  masqueradeAll: boolean;
  syncPeriodMs: number;
  minSyncPeriodMs: number;
}

/** Conntrack sysctls kube-proxy sets at start; 0 leaves a value as the kernel has it. */
export interface ConntrackConfig {
  maxPerCore: number;
  min: number;
  tcpEstablishedTimeoutMs: number;
  tcpCloseWaitTimeoutMs: number;
  tcpBeLiberal: boolean;
  udpTimeoutMs: number;
  udpStreamTimeoutMs: number;
}

/** Windows-only settings, kept so that a shared config file decodes and round-trips. */
export interface WinkernelConfig {
  networkName: string;
  sourceVip: string;
  enableDSR: boolean;
  rootHnsEndpointName: string;
  forwardHealthCheckVip: boolean;
}

/** Settings for the interface-based local traffic detectors. */
export interface DetectLocalConfig {
  bridgeInterface: string;
  interfaceNamePrefix: string;
}

/** Per-file verbosity override (klog vmodule). */
export interface VModuleItem {
  filePath: string;
  verbosity: number;
}

/** Output routing options of one log format (component-base logging, alpha). */
export interface LogFormatOptions {
  splitStream: boolean;
  /** A Kubernetes quantity such as "0" or "64Ki". */
  infoBufferSize: string;
}

/** Logging settings: format and verbosity are what the logger uses; the rest round-trips. */
export interface LoggingConfig {
  format: LoggingFormat;
  verbosity: number;
  flushFrequencyMs: number;
  vmodule: VModuleItem[];
  options: { text: LogFormatOptions; json: LogFormatOptions };
}

/** The complete, defaulted and resolved configuration every other module reads. */
export interface ProxyConfig {
  featureGates: Record<string, boolean>;
  clientConnection: ClientConnectionConfig;
  logging: LoggingConfig;
  /** The node name: resolved from the flag, the file or the host name, lower-cased. */
  hostnameOverride: string;
  /** The node's primary IP override (not a listen address, despite the name). */
  bindAddress: string;
  /** `host:port` of /healthz; "" disables the server. */
  healthzBindAddress: string;
  /** `host:port` of /metrics; "" disables the server. */
  metricsBindAddress: string;
  bindAddressHardFail: boolean;
  enableProfiling: boolean;
  showHiddenMetricsForVersion: string;
  mode: ProxyModeName;
  iptables: IPTablesConfig;
  ipvs: IPVSConfig;
  nftables: NFTablesConfig;
  winkernel: WinkernelConfig;
  detectLocalMode: LocalMode;
  detectLocal: DetectLocalConfig;
  /** Pod CIDRs, at most one per family (the file's comma-separated `clusterCIDR`). */
  clusterCIDRs: string[];
  /** CIDRs NodePorts are served on, or `["primary"]`; empty means every local address. */
  nodePortAddresses: string[];
  oomScoreAdj: number;
  conntrack: ConntrackConfig;
  configSyncPeriodMs: number;
  portRange: string;
  windowsRunAsService: boolean;

  /** Sync period of the chosen mode's section (upstream's internal `syncPeriod`). */
  syncPeriodMs: number;
  /** Minimum sync period of the chosen mode's section. */
  minSyncPeriodMs: number;
  /** masqueradeAll of the chosen mode (iptables section for iptables and ipvs). */
  masqueradeAll: boolean;
  /** masqueradeBit of the chosen mode (iptables section for iptables and ipvs). */
  masqueradeBit: number;

  /** `--master`: API server URL overriding the kubeconfig's; "" when unset. */
  master: string;
  /** `--manifests`: a file or directory of objects used instead of an API server; "" when unset. */
  manifests: string;
  /** `--node-ip`: canonical node addresses, at most one per family. */
  nodeIPs: string[];
}

/** What the process should do, decided from the flags and the `render` subcommand. */
export type Command =
  | "run"
  | "render"
  | "trace"
  | "cleanup"
  | "init-only"
  | "write-config"
  | "help"
  | "version";

/** The parsed command line: the command plus the configuration it runs with. */
export interface CommandLine {
  command: Command;
  config: ProxyConfig;
  /** `--config` path, "" when none. */
  configFile: string;
  /** `--write-config-to` path, "" when none. */
  writeConfigTo: string;
  /** The packet and options of `trace`; set only for that command. */
  trace?: TraceRequest;
}

/** Bad flags, a bad config file or an invalid value; the caller prints the message and exits 1. */
export class ConfigError extends Error {
  override name = "ConfigError";
}

/** A transport protocol as `--to` spells it. */
export type TraceArgProtocol = "tcp" | "udp" | "sctp";

/** What `trace` was asked. */
export interface TraceRequest {
  readonly family: "IPv4" | "IPv6";
  readonly from: string;
  readonly to: string;
  readonly port: number;
  readonly protocol: TraceArgProtocol;
  /** Where the packet enters; "auto" = told from --from (a node address, a pod, or outside). */
  readonly source: "pod" | "node" | "external" | "auto";
  readonly output: "text" | "json";
  /** Trace the mode's rendering of the state instead of the kernel's rules. */
  readonly rendered: boolean;
}
