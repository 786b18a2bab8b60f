/**
 * Every command-line flag: its spelling, value type, help line and how it changes the
 * configuration. The mode-neutral flags are listed here, each mode's in its config section; the
 * parser, the precedence rules and `--help` all read the one table flagTable() joins them into.
 */
import { type ModeConfigSections, modeNames } from "./mode_section.ts";
import { getPath, LOCAL_MODES, LOGGING_FORMATS, setPath } from "./schema.ts";
import type { ProxyConfig, VModuleItem } from "./types.ts";

/** How a flag's text is parsed. */
export type FlagKind =
  | "bool"
  | "string"
  | "int32"
  | "uint32"
  | "float"
  | "duration"
  | "enum"
  | "list"
  | "map"
  | "ip"
  | "ipList"
  | "hostPort"
  | "vmodule";

/** A parsed flag value. */
export type FlagValue =
  | string
  | number
  | boolean
  | string[]
  | Record<string, boolean>
  | VModuleItem[];

/**
 * Which flags a config file overrides. "config": ignored when `--config` is given (upstream's
 * rule); "logging" and "always": applied on top of the file; "meta": read by parseCommandLine.
 */
export type FlagGroup = "config" | "logging" | "always" | "meta";

/** One flag. */
export interface FlagSpec {
  readonly name: string;
  readonly shorthand?: string;
  readonly kind: FlagKind;
  readonly group: FlagGroup;
  /** The value type as `--help` shows it, e.g. "duration". */
  readonly typeName: string;
  /** The default as `--help` shows it; "" hides it. */
  readonly defaultText: string;
  readonly help: string;
  /** Allowed values of an "enum" flag. */
  readonly values?: readonly string[];
  /** A comma-separated "list" flag that upstream declares as a plain string: the last one wins. */
  readonly lastWins?: boolean;
  /** ProxyConfig property paths the value is stored at (none for "meta" flags). */
  readonly targets: readonly string[];
}

type Extra = Partial<Pick<FlagSpec, "shorthand" | "values" | "lastWins">>;

/**
 * One flag row: name, value kind, precedence group, default as `--help` shows it, the ProxyConfig
 * paths it sets, optional extras and its help line.
 */
export function flagSpec(
  name: string,
  kind: FlagKind,
  group: FlagGroup,
  defaultText: string,
  targets: string | readonly string[],
  extra: Extra,
  help: string,
): FlagSpec;
export function flagSpec(
  name: string,
  kind: FlagKind,
  group: FlagGroup,
  defaultText: string,
  targets: string | readonly string[],
  help: string,
): FlagSpec;
export function flagSpec(
  name: string,
  kind: FlagKind,
  group: FlagGroup,
  defaultText: string,
  targets: string | readonly string[],
  extraOrHelp: Extra | string,
  maybeHelp?: string,
): FlagSpec {
  const extra = typeof extraOrHelp === "string" ? {} : extraOrHelp;
  const help = typeof extraOrHelp === "string" ? extraOrHelp : maybeHelp ?? "";
  const typeName = TYPE_NAMES[kind];
  const list = typeof targets === "string" ? [targets] : targets;
  return { name, kind, group, typeName, defaultText, help, targets: list, ...extra };
}

const flag = flagSpec;
const C = "config" as const;

const TYPE_NAMES: Readonly<Record<FlagKind, string>> = {
  bool: "",
  string: "string",
  int32: "int32",
  uint32: "int",
  float: "float",
  duration: "duration",
  enum: "string",
  list: "strings",
  map: "name=bool,...",
  ip: "ip",
  ipList: "ips",
  hostPort: "ip:port",
  vmodule: "pattern=N,...",
};

/**
 * The flags of no one mode, `--proxy-mode` naming `modes`. Flags that set mode sections'
 * fields (`--masquerade-all`) get their targets from the sections' sharedFlagTargets.
 */
// deno-fmt-ignore
function modeNeutralFlags(modes: readonly string[]): FlagSpec[] {
  return [
  flag("bind-address", "ip", C, "0.0.0.0", "bindAddress",
    "Override of the node's primary IP (no socket is bound to it)."),
  flag("bind-address-hard-fail", "bool", C, "false", "bindAddressHardFail",
    "Exit when a server cannot bind its port."),
  flag("boot-id-file", "string", "meta", "/proc/sys/kernel/random/boot_id", [],
    "Comma-separated files to read the boot ID from; kube-proxy never reads them."),
  flag("cleanup", "bool", "meta", "false", [],
    "Remove the iptables, IPVS and nftables state of every mode, then exit."),
  flag("cluster-cidr", "list", C, "", "clusterCIDRs", { lastWins: true },
    "Pod CIDR range(s), one per family, comma-separated; used by --detect-local-mode ClusterCIDR."),
  flag("config", "string", "meta", "", [],
    "Path of a KubeProxyConfiguration file; it replaces most other flags."),
  flag("config-sync-period", "duration", C, "15m0s", "configSyncPeriodMs",
    "How often API informers resync; must be greater than 0."),
  flag("conntrack-max-per-core", "int32", C, "32768", "conntrack.maxPerCore",
    "Tracked connections allowed per CPU core (0 leaves the limit and ignores --conntrack-min)."),
  flag("conntrack-min", "int32", C, "131072", "conntrack.min",
    "Lower bound of the conntrack table size whatever the core count."),
  flag("conntrack-tcp-be-liberal", "bool", C, "false", "conntrack.tcpBeLiberal",
    "Set nf_conntrack_tcp_be_liberal so out-of-window TCP packets are not marked INVALID."),
  flag("conntrack-tcp-timeout-close-wait", "duration", C, "1h0m0s",
    "conntrack.tcpCloseWaitTimeoutMs",
    "Conntrack timeout of TCP connections in CLOSE_WAIT."),
  flag("conntrack-tcp-timeout-established", "duration", C, "24h0m0s",
    "conntrack.tcpEstablishedTimeoutMs",
    "Conntrack timeout of idle established TCP connections (0 leaves it as is)."),
  flag("conntrack-udp-timeout", "duration", C, "0s", "conntrack.udpTimeoutMs",
    "Conntrack timeout of UNREPLIED UDP flows (0 leaves it as is)."),
  flag("conntrack-udp-timeout-stream", "duration", C, "0s", "conntrack.udpStreamTimeoutMs",
    "Conntrack timeout of ASSURED UDP flows (0 leaves it as is)."),
  flag("detect-local-mode", "enum", C, "ClusterCIDR", "detectLocalMode", { values: LOCAL_MODES },
    `How traffic from local pods is recognised: ${LOCAL_MODES.join(", ")}.`),
  flag("feature-gates", "map", C, "", "featureGates",
    "Feature gates as comma-separated name=true|false pairs."),
  flag("from", "string", "meta", "", [],
    "trace: the packet's source IP."),
  flag("healthz-bind-address", "hostPort", C, "0.0.0.0:10256", "healthzBindAddress",
    "IP:port of the /healthz server."),
  flag("healthz-port", "int32", "meta", "10256", [],
    "Deprecated: port of the /healthz server, 0 disables it; use --healthz-bind-address."),
  flag("help", "bool", "meta", "", [], { shorthand: "h" },
    "Print this help and exit."),
  flag("hostname-override", "string", "meta", "", [],
    "Node name to use instead of the host name (also applies with --config)."),
  flag("init-only", "bool", "meta", "false", [],
    "Apply the node settings that need full root privileges (sysctls), then exit."),
  flag("kube-api-burst", "int32", C, "10", "clientConnection.burst",
    "Request burst allowed towards the API server."),
  flag("kube-api-content-type", "string", C, "application/vnd.kubernetes.protobuf",
    "clientConnection.contentType",
    "Content type of requests to the API server."),
  flag("kube-api-qps", "float", C, "5", "clientConnection.qps",
    "Requests per second allowed towards the API server."),
  flag("kubeconfig", "string", C, "", "clientConnection.kubeconfig",
    "Path of a kubeconfig file (--master overrides its server)."),
  flag("log-flush-frequency", "duration", "logging", "5s", "logging.flushFrequencyMs",
    "Most time between log flushes (lines are written at once)."),
  flag("log-json-info-buffer-size", "string", "logging", "0", "logging.options.json.infoBufferSize",
    "Size of the info stream buffer with --log-json-split-stream; only 0 is supported."),
  flag("log-json-split-stream", "bool", "logging", "false", "logging.options.json.splitStream",
    "Write error messages to stderr and info messages to stdout; not supported."),
  flag("log-text-info-buffer-size", "string", "logging", "0", "logging.options.text.infoBufferSize",
    "Size of the info stream buffer with --log-text-split-stream; only 0 is supported."),
  flag("log-text-split-stream", "bool", "logging", "false", "logging.options.text.splitStream",
    "Write error messages to stderr and info messages to stdout; not supported."),
  flag("logging-format", "enum", "logging", "text", "logging.format", { values: LOGGING_FORMATS },
    "Log line format: text or json."),
  flag("machine-id-file", "string", "meta", "/etc/machine-id,/var/lib/dbus/machine-id", [],
    "Comma-separated files to read the machine ID from; kube-proxy never reads them."),
  flag("manifests", "string", "always", "", "manifests",
    "File or directory of Service, EndpointSlice and Node objects used instead of an API server."),
  flag("masquerade-all", "bool", C, "false", [],
    "SNAT all traffic sent to Service cluster IPs."),
  flag("master", "string", "meta", "", [],
    "URL of the API server (overrides the kubeconfig's)."),
  flag("metrics-bind-address", "hostPort", C, "127.0.0.1:10249", "metricsBindAddress",
    'IP:port of the /metrics server ("0.0.0.0:10249" for all interfaces).'),
  flag("metrics-port", "int32", "meta", "10249", [],
    "Deprecated: port of the /metrics server, 0 disables it; use --metrics-bind-address."),
  flag("node-ip", "ipList", "always", "", "nodeIPs",
    "The node's IPs, at most one per family, when no Node object gives them."),
  flag("nodeport-addresses", "list", C, "", "nodePortAddresses",
    'CIDRs of the node IPs NodePorts are served on, or "primary"; empty means all.'),
  flag("oom-score-adj", "int32", C, "-999", "oomScoreAdj",
    "oom_score_adj of the process; -1000 to 1000."),
  flag("output", "enum", "meta", "text", [], { values: ["text", "json"] },
    "trace: print text or json."),
  flag("pod-bridge-interface", "string", C, "", "detectLocal.bridgeInterface",
    "Bridge whose traffic is local, for --detect-local-mode BridgeInterface."),
  flag("pod-interface-name-prefix", "string", C, "", "detectLocal.interfaceNamePrefix",
    "Interface name prefix whose traffic is local, for --detect-local-mode InterfaceNamePrefix."),
  flag("profiling", "bool", C, "false", "enableProfiling",
    "Serve /debug/pprof on the metrics server; not supported (Go's profiler)."),
  flag("proxy-mode", "enum", C, "iptables", "mode", { values: modes },
    `Proxy mode: ${modes.join(", ")}.`),
  flag("rendered", "bool", "meta", "false", [],
    "trace: follow the mode's rendering of the state instead of the kernel's rules (no root)."),
  flag("show-hidden-metrics-for-version", "string", C, "", "showHiddenMetricsForVersion",
    'Previous minor version ("1.33") whose hidden metrics are shown.'),
  flag("source", "enum", "meta", "", [], { values: ["pod", "node", "external"] },
    "trace: where the packet enters: a local pod, the node itself, or outside (default: told from --from)."),
  flag("to", "string", "meta", "", [],
    "trace: the packet's destination, IP:PORT[/tcp|udp|sctp] ([IPv6]:PORT for IPv6)."),
  flag("v", "uint32", "logging", "0", "logging.verbosity", { shorthand: "v" },
    "Log verbosity."),
  flag("version", "bool", "meta", "", [],
    "Print the version and exit."),
  flag("vmodule", "vmodule", "logging", "", "logging.vmodule",
    "Per-file verbosity, pattern=N,...; not supported (the patterns name Go source files)."),
  flag("write-config-to", "string", "meta", "", [],
    "Write the resulting configuration as YAML to this file and exit."),
];
}

/** Every flag, sorted by name as `--help` prints them, with lookups by name and shorthand. */
export interface FlagTable {
  readonly flags: readonly FlagSpec[];
  readonly byName: ReadonlyMap<string, FlagSpec>;
  readonly byShorthand: ReadonlyMap<string, FlagSpec>;
}

const TABLES = new WeakMap<ModeConfigSections, FlagTable>();

/**
 * The flag table for `modeSections`: the mode-neutral flags and each section's own, each shared
 * flag carrying every section's target. Built once per set of sections.
 */
export function flagTable(modeSections: ModeConfigSections): FlagTable {
  const known = TABLES.get(modeSections);
  if (known !== undefined) return known;
  const modes = modeNames(modeSections);
  const byName = new Map<string, FlagSpec>();
  for (const spec of [...modeNeutralFlags(modes), ...modes.flatMap((m) => modeSections[m].flags)]) {
    if (byName.has(spec.name)) throw new Error(`Flag "--${spec.name}" is declared twice`);
    byName.set(spec.name, spec);
  }
  for (const mode of modes) {
    for (const [name, target] of Object.entries(modeSections[mode].sharedFlagTargets ?? {})) {
      const spec = byName.get(name);
      if (spec === undefined) throw new Error(`Mode ${mode} shares unknown flag "--${name}"`);
      byName.set(name, { ...spec, targets: [...spec.targets, target] });
    }
  }
  const flags = [...byName.values()].sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const table: FlagTable = {
    flags,
    byName: new Map(flags.map((f) => [f.name, f])),
    byShorthand: new Map(
      flags.filter((f) => f.shorthand !== undefined).map((f) => [f.shorthand!, f]),
    ),
  };
  TABLES.set(modeSections, table);
  return table;
}

/** Stores a flag's parsed value into the configuration; a map flag adds to the existing map. */
export function applyFlag(config: ProxyConfig, spec: FlagSpec, value: FlagValue): void {
  for (const target of spec.targets) {
    const path = target.split(".");
    const merged = spec.kind === "map"
      ? {
        ...(getPath(config, path) as Record<string, boolean>),
        ...(value as Record<string, boolean>),
      }
      : Array.isArray(value)
      ? [...value]
      : value;
    setPath(config, path, merged);
  }
}
