/**
 * Turns argv into a CommandLine: flags, the optional config file and upstream's precedence
 * between them, defaults, validation, and the resolved node name.
 */
import { errorMessage } from "../log/mod.ts";
import { decodeConfigFile } from "./config_file.ts";
import {
  appendPortIfNeeded,
  DEFAULT_HEALTHZ_PORT,
  DEFAULT_METRICS_PORT,
  defaultConfig,
  resolveModeFields,
} from "./defaults.ts";
import {
  applyFlag,
  type FlagGroup,
  type FlagTable,
  flagTable,
  type FlagValue,
} from "./_flag_table.ts";
import { parseFlags } from "./_flags.ts";
import { type Command, type CommandLine, ConfigError, type ProxyConfig } from "./types.ts";
import type { ModeSectionsOptions, ValidationIssue } from "./mode_section.ts";
import { validateConfig } from "./validate.ts";
import { parseTraceArgs, TRACE_FLAGS } from "./_trace_args.ts";

/**
 * What parseCommandLine needs: each mode's config section (from the mode registry, which
 * lib/config cannot import), and seams for file reading and the host name, real by default.
 */
export interface ParseCommandLineOptions extends ModeSectionsOptions {
  readonly readTextFile?: (path: string) => string;
  readonly hostname?: () => string;
}

function applyFlags(
  table: FlagTable,
  config: ProxyConfig,
  values: ReadonlyMap<string, FlagValue>,
  groups: readonly FlagGroup[],
): void {
  for (const spec of table.flags) {
    const value = values.get(spec.name);
    if (value !== undefined && groups.includes(spec.group)) applyFlag(config, spec, value);
  }
}

function readConfigFile(
  path: string,
  read: (path: string) => string,
  options: ModeSectionsOptions,
): ProxyConfig {
  let text: string;
  try {
    text = read(path);
  } catch (err) {
    const reason = errorMessage(err);
    throw new ConfigError(`Cannot read --config file "${path}": ${reason}`);
  }
  return decodeConfigFile(text, path, options);
}

function describe(
  issue: ValidationIssue,
  configFile: string,
  texts: ReadonlyMap<string, string>,
): string {
  const tail = issue.reason ?? `expected ${issue.expected}`;
  if (configFile === "" && issue.flag !== undefined) {
    // Quote the value as the user typed it when a single flag set it.
    const typed = texts.get(issue.flag.slice(2));
    const value = typed !== undefined && !typed.includes(",") ? typed : issue.value;
    return `Invalid ${issue.flag} "${value}": ${tail}`;
  }
  const where = configFile === "" ? "" : ` in ${configFile}`;
  return `Invalid ${issue.field} "${issue.value}"${where}: ${tail}`;
}

/** Upstream's node-name rule: trimmed and lower-cased; an all-blank override is an error. */
function nodeName(override: string | undefined, fromFile: string): string {
  if (override !== undefined && override !== "") {
    const name = override.trim();
    if (name === "") {
      throw new ConfigError(`Invalid --hostname-override "${override}": expected a node name`);
    }
    return name.toLowerCase();
  }
  return fromFile.trim().toLowerCase();
}

function pickCommand(
  values: ReadonlyMap<string, FlagValue>,
  subcommand: "render" | "trace" | null,
): Command {
  if (values.get("write-config-to")) return "write-config";
  if (values.get("cleanup") === true) return "cleanup";
  // Upstream's order: --write-config-to, then --cleanup, then --init-only.
  if (values.get("init-only") === true && subcommand === null) return "init-only";
  return subcommand ?? "run";
}

/**
 * Parses kube-proxy's command line (plus our `render` subcommand, `--manifests` and `--node-ip`).
 * With `--config`, the file wins over flags except `--hostname-override`, the logging flags and
 * our additions, as upstream. Throws ConfigError for unknown flags and invalid values.
 */
export function parseCommandLine(
  args: readonly string[],
  options: ParseCommandLineOptions,
): CommandLine {
  const readTextFile = options.readTextFile ?? Deno.readTextFileSync;
  const hostname = options.hostname ?? Deno.hostname;
  const table = flagTable(options.modeSections);
  const { values, texts, positionals } = parseFlags(args, table);

  let subcommand: "render" | "trace" | null = null;
  for (const arg of positionals) {
    if ((arg === "render" || arg === "trace") && subcommand === null) subcommand = arg;
    else {
      throw new ConfigError(
        `Unexpected argument "${arg}": expected no arguments besides a "render" or "trace" subcommand`,
      );
    }
  }
  if (subcommand !== "trace") {
    const misplaced = TRACE_FLAGS.find((name) => values.has(name));
    if (misplaced !== undefined) {
      throw new ConfigError(`Invalid --${misplaced}: expected only with the "trace" subcommand`);
    }
  }
  const configFile = (values.get("config") as string | undefined) ?? "";
  const writeConfigTo = (values.get("write-config-to") as string | undefined) ?? "";
  if (values.get("help") === true) {
    return { command: "help", config: defaultConfig(options), configFile, writeConfigTo };
  }
  if (values.get("version") === true) {
    return { command: "version", config: defaultConfig(options), configFile, writeConfigTo };
  }

  let config: ProxyConfig;
  if (configFile !== "") {
    config = readConfigFile(configFile, readTextFile, options);
    applyFlags(table, config, values, ["logging", "always"]);
  } else {
    config = defaultConfig(options);
    applyFlags(table, config, values, ["config", "logging", "always"]);
    const healthzPort = values.get("healthz-port") as number | undefined;
    const metricsPort = values.get("metrics-port") as number | undefined;
    config.healthzBindAddress = healthzPort === 0
      ? ""
      : appendPortIfNeeded(config.healthzBindAddress, healthzPort ?? DEFAULT_HEALTHZ_PORT);
    config.metricsBindAddress = metricsPort === 0
      ? ""
      : appendPortIfNeeded(config.metricsBindAddress, metricsPort ?? DEFAULT_METRICS_PORT);
  }
  config.master = (values.get("master") as string | undefined) ?? "";
  resolveModeFields(config, options);

  const issues = validateConfig(config, { modeSections: options.modeSections });
  if (issues.length > 0) {
    throw new ConfigError(issues.map((i) => describe(i, configFile, texts)).join("\n"));
  }

  const command = pickCommand(values, subcommand);
  const trace = command === "trace" ? parseTraceArgs(values) : undefined;
  config.hostnameOverride = nodeName(
    values.get("hostname-override") as string | undefined,
    config.hostnameOverride,
  );
  // As upstream, the written file keeps an unset override unset; everything else needs a name.
  if (config.hostnameOverride === "" && command !== "write-config") {
    config.hostnameOverride = hostname().trim().toLowerCase();
    if (config.hostnameOverride === "") {
      throw new ConfigError(
        `Invalid host name "": expected --hostname-override to give a node name`,
      );
    }
  }
  return { command, config, configFile, writeConfigTo, ...(trace ? { trace } : {}) };
}
