/** Public face of lib/config: flags, the config file, defaults, validation, help and version. */
export type {
  ClientConnectionConfig,
  Command,
  CommandLine,
  ConntrackConfig,
  DetectLocalConfig,
  IPTablesConfig,
  IPVSConfig,
  LocalMode,
  LogFormatOptions,
  LoggingConfig,
  LoggingFormat,
  NFTablesConfig,
  ProxyConfig,
  ProxyModeName,
  TraceRequest,
  VModuleItem,
  WinkernelConfig,
} from "./types.ts";
export { ConfigError } from "./types.ts";
export { parseCommandLine, type ParseCommandLineOptions } from "./command_line.ts";
export { decodeConfigFile } from "./config_file.ts";
export { configToYaml } from "./config_yaml.ts";
export { defaultConfig, primaryNodeIPOverride } from "./defaults.ts";
export { type CommonRenderOptions, commonRenderOptions } from "./family_options.ts";
export {
  checkFeatureGates,
  FEATURE_GATES,
  featureEnabled,
  type FeatureGateSpec,
  type FeatureStage,
} from "./feature_gates.ts";
export { formatDuration, parseDuration } from "./duration.ts";
export { helpText, VERSION } from "./help.ts";
export { validateConfig, type ValidationIssue } from "./validate.ts";
export { parseTraceArgs, TRACE_FLAGS } from "./trace_args.ts";
