/** Public face of lib/config: flags, the config file, defaults, validation, help and version. */
export { parseCommandLine, type ParseCommandLineOptions } from "./command_line.ts";
export { decodeConfigFile } from "./config_file.ts";
export { configToYaml } from "./config_yaml.ts";
export {
  DEFAULT_MIN_SYNC_PERIOD_MS,
  DEFAULT_SYNC_PERIOD_MS,
  defaultConfig,
  primaryNodeIPOverride,
} from "./defaults.ts";
export { formatDuration, parseDuration } from "./duration.ts";
export { commonRenderOptions } from "./family_options.ts";
export { featureEnabled } from "./feature_gates.ts";
export { helpText, VERSION } from "./help.ts";
export type {
  ModeConfigSection,
  ModeConfigSections,
  ModeSectionsOptions,
  ValidationIssue,
} from "./mode_section.ts";
export { fieldSpec, type Schema } from "./schema.ts";
export { type FlagSpec, flagSpec } from "./_flag_table.ts";
export {
  ConfigError,
  type ConntrackConfig,
  type ProxyConfig,
  type ProxyModeName,
  type TraceRequest,
} from "./types.ts";
export { validateConfig, type ValidateConfigOptions } from "./validate.ts";
