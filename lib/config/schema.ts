/**
 * The v1alpha1 KubeProxyConfiguration field set (as of Kubernetes 1.34), as data: each YAML key,
 * its type, and where it lives in ProxyConfig. The strict decoder and the YAML writer both walk
 * this one table, so they cannot disagree. Each mode's section comes from its ModeConfigSection.
 */
import { type ModeConfigSections, modeNames } from "./mode_section.ts";

/** The group/version a config file must declare. */
export const CONFIG_API_VERSION = "kubeproxy.config.k8s.io/v1alpha1";
/** The kind a config file must declare. */
export const CONFIG_KIND = "KubeProxyConfiguration";

/** Local traffic detectors upstream supports. */
export const LOCAL_MODES = [
  "ClusterCIDR",
  "NodeCIDR",
  "BridgeInterface",
  "InterfaceNamePrefix",
] as const;
/** Log formats the logger implements. */
export const LOGGING_FORMATS = ["text", "json"] as const;

/** How a YAML value is checked and converted. */
export type FieldKind =
  | "string"
  | "bool"
  | "int32"
  | "uint32"
  | "float"
  | "duration"
  | "enum"
  | "stringList"
  | "commaList"
  | "boolMap"
  | "quantity"
  | "vmodule"
  | "durationOrNanos";

/** One leaf field of the file. */
export interface FieldSpec {
  readonly kind: FieldKind;
  /** Property path inside ProxyConfig. */
  readonly target: readonly string[];
  /** Go defaulting treats the zero value ("" / 0 / "0s") as unset and replaces it. */
  readonly zeroMeansDefault?: boolean;
  /** The writer leaves the field out when it is empty, like Go's `omitempty`. */
  readonly omitEmpty?: boolean;
  /** Allowed values of an "enum" field; "" is also accepted when zeroMeansDefault. */
  readonly values?: readonly string[];
}

/** A nested object of the file. */
export interface SectionSpec {
  readonly section: Schema;
}

/** Keys of one YAML mapping and what each holds. */
export type Schema = Readonly<Record<string, FieldSpec | SectionSpec>>;

/** One leaf field: its kind, its dotted ProxyConfig path and its options. */
export function fieldSpec(
  kind: FieldKind,
  target: string,
  extra: Partial<FieldSpec> = {},
): FieldSpec {
  return { kind, target: target.split("."), ...extra };
}

const f = fieldSpec;

const ZERO = { zeroMeansDefault: true } as const;

function formatOptions(prefix: string): SectionSpec {
  return {
    section: {
      splitStream: f("bool", `${prefix}.splitStream`, { omitEmpty: true }),
      infoBufferSize: f("quantity", `${prefix}.infoBufferSize`),
    },
  };
}

const FIELDS_BEFORE_MODE: Schema = {
  featureGates: f("boolMap", "featureGates", { omitEmpty: true }),
  clientConnection: {
    section: {
      kubeconfig: f("string", "clientConnection.kubeconfig"),
      acceptContentTypes: f("string", "clientConnection.acceptContentTypes"),
      contentType: f("string", "clientConnection.contentType", ZERO),
      qps: f("float", "clientConnection.qps", ZERO),
      burst: f("int32", "clientConnection.burst", ZERO),
    },
  },
  logging: {
    section: {
      format: f("enum", "logging.format", { ...ZERO, values: LOGGING_FORMATS }),
      flushFrequency: f("durationOrNanos", "logging.flushFrequencyMs", ZERO),
      verbosity: f("uint32", "logging.verbosity"),
      vmodule: f("vmodule", "logging.vmodule", { omitEmpty: true }),
      options: {
        section: {
          text: formatOptions("logging.options.text"),
          json: formatOptions("logging.options.json"),
        },
      },
    },
  },
  hostnameOverride: f("string", "hostnameOverride"),
  bindAddress: f("string", "bindAddress"),
  healthzBindAddress: f("string", "healthzBindAddress"),
  metricsBindAddress: f("string", "metricsBindAddress"),
  bindAddressHardFail: f("bool", "bindAddressHardFail"),
  enableProfiling: f("bool", "enableProfiling"),
  showHiddenMetricsForVersion: f("string", "showHiddenMetricsForVersion"),
};

const FIELDS_AFTER_MODE_SECTIONS: Schema = {
  winkernel: {
    section: {
      networkName: f("string", "winkernel.networkName"),
      sourceVip: f("string", "winkernel.sourceVip"),
      enableDSR: f("bool", "winkernel.enableDSR"),
      rootHnsEndpointName: f("string", "winkernel.rootHnsEndpointName"),
      forwardHealthCheckVip: f("bool", "winkernel.forwardHealthCheckVip"),
    },
  },
  detectLocalMode: f("enum", "detectLocalMode", { ...ZERO, values: LOCAL_MODES }),
  detectLocal: {
    section: {
      bridgeInterface: f("string", "detectLocal.bridgeInterface"),
      interfaceNamePrefix: f("string", "detectLocal.interfaceNamePrefix"),
    },
  },
  clusterCIDR: f("commaList", "clusterCIDRs"),
  nodePortAddresses: f("stringList", "nodePortAddresses"),
  oomScoreAdj: f("int32", "oomScoreAdj"),
  conntrack: {
    section: {
      maxPerCore: f("int32", "conntrack.maxPerCore"),
      min: f("int32", "conntrack.min"),
      tcpEstablishedTimeout: f("duration", "conntrack.tcpEstablishedTimeoutMs"),
      tcpCloseWaitTimeout: f("duration", "conntrack.tcpCloseWaitTimeoutMs"),
      tcpBeLiberal: f("bool", "conntrack.tcpBeLiberal"),
      udpTimeout: f("duration", "conntrack.udpTimeoutMs"),
      udpStreamTimeout: f("duration", "conntrack.udpStreamTimeoutMs"),
    },
  },
  configSyncPeriod: f("duration", "configSyncPeriodMs", ZERO),
  portRange: f("string", "portRange"),
  windowsRunAsService: f("bool", "windowsRunAsService", { omitEmpty: true }),
};

/**
 * Every field of a v1alpha1 KubeProxyConfiguration except apiVersion and kind: the mode-neutral
 * fields, `mode` naming one of `modeSections`, and each mode's section under its name.
 */
export function configSchema(modeSections: ModeConfigSections): Schema {
  const sections: Record<string, SectionSpec> = {};
  for (const mode of modeNames(modeSections)) {
    sections[mode] = { section: modeSections[mode].schema };
  }
  return {
    ...FIELDS_BEFORE_MODE,
    mode: f("enum", "mode", { ...ZERO, values: modeNames(modeSections) }),
    ...sections,
    ...FIELDS_AFTER_MODE_SECTIONS,
  };
}

/** True when a schema entry is a nested section rather than a leaf field. */
export function isSection(spec: FieldSpec | SectionSpec): spec is SectionSpec {
  return "section" in spec;
}

/** Reads the value at `path` inside a config object. */
export function getPath(root: object, path: readonly string[]): unknown {
  let node: unknown = root;
  for (const key of path) node = (node as Record<string, unknown>)[key];
  return node;
}

/** Writes `value` at `path` inside a config object whose intermediate objects exist. */
export function setPath(root: object, path: readonly string[], value: unknown): void {
  let node = root as Record<string, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path[path.length - 1]!] = value;
}
