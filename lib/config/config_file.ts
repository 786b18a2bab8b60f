/**
 * Strict decoding of a KubeProxyConfiguration file (YAML or JSON): unknown fields, wrong types and
 * a wrong apiVersion/kind are errors that name the field and the file, as upstream's strict
 * decoder makes them.
 */
import { parse } from "yaml";
import { errorMessage } from "../log/mod.ts";
import { parseDuration } from "./duration.ts";
import { defaultBindAddresses, defaultConfig, resolveModeFields } from "./defaults.ts";
import type { ModeSectionsOptions } from "./mode_section.ts";
import {
  CONFIG_API_VERSION,
  CONFIG_KIND,
  configSchema,
  type FieldSpec,
  isSection,
  type Schema,
  setPath,
} from "./schema.ts";
import { ConfigError, type ProxyConfig, type VModuleItem } from "./types.ts";

type Converted = { ok: true; value: unknown } | { ok: false; expected: string };

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;
const UINT32_MAX = 4294967295;

function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function shown(value: unknown): string {
  return typeof value === "string" ? value : JSON.stringify(value) ?? String(value);
}

function ok(value: unknown): Converted {
  return { ok: true, value };
}

function bad(expected: string): Converted {
  return { ok: false, expected };
}

function integer(value: unknown, min: number, max: number, expected: string): Converted {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max
    ? ok(value)
    : bad(expected);
}

function duration(value: unknown): Converted {
  if (typeof value !== "string") return bad('a duration string such as "30s"');
  try {
    return ok(parseDuration(value));
  } catch {
    return bad('a duration such as "30s"');
  }
}

/** Checks one leaf value against its kind and converts it to the internal form. */
function convert(spec: FieldSpec, value: unknown, where: string): Converted {
  switch (spec.kind) {
    case "string":
      return typeof value === "string" ? ok(value) : bad("a string");
    case "bool":
      return typeof value === "boolean" ? ok(value) : bad("true or false");
    case "int32":
      return integer(value, INT32_MIN, INT32_MAX, "a 32-bit integer");
    case "uint32":
      return integer(value, 0, UINT32_MAX, "a non-negative integer");
    case "float":
      return typeof value === "number" && Number.isFinite(value) ? ok(value) : bad("a number");
    case "duration":
      return duration(value);
    case "durationOrNanos":
      // component-base accepts a duration string or an integer of nanoseconds here.
      if (typeof value === "number" && Number.isInteger(value)) return ok(value / 1e6);
      return duration(value);
    case "enum": {
      const values = spec.values ?? [];
      if (typeof value === "string" && (values.includes(value) || value === "")) return ok(value);
      return bad(`one of ${values.map((v) => `"${v}"`).join(", ")}`);
    }
    case "stringList":
      return Array.isArray(value) && value.every((v) => typeof v === "string")
        ? ok([...value])
        : bad("a list of strings");
    case "commaList":
      if (typeof value !== "string") return bad("a comma-separated string");
      return ok(value === "" ? [] : value.split(",").map((s) => s.trim()));
    case "boolMap":
      return isMapping(value) && Object.values(value).every((v) => typeof v === "boolean")
        ? ok({ ...value })
        : bad("a mapping of names to true or false");
    case "quantity":
      if (typeof value === "number" && Number.isFinite(value)) return ok(String(value));
      return typeof value === "string" && /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|[a-zA-Z]{1,2})?$/
          .test(value)
        ? ok(value)
        : bad('a quantity such as "0" or "64Ki"');
    case "vmodule":
      return convertVModule(value, where);
  }
}

function convertVModule(value: unknown, where: string): Converted {
  if (!Array.isArray(value)) return bad("a list of {filePath, verbosity} items");
  const items: VModuleItem[] = [];
  for (const [i, item] of value.entries()) {
    if (!isMapping(item)) return bad("a list of {filePath, verbosity} items");
    for (const key of Object.keys(item)) {
      if (key !== "filePath" && key !== "verbosity") {
        throw new ConfigError(`Unknown field "logging.vmodule[${i}].${key}" in ${where}`);
      }
    }
    const { filePath = "", verbosity = 0 } = item;
    if (typeof filePath !== "string" || !Number.isInteger(verbosity) || (verbosity as number) < 0) {
      return bad("a list of {filePath: string, verbosity: integer} items");
    }
    items.push({ filePath, verbosity: verbosity as number });
  }
  return ok(items);
}

function isZero(value: unknown): boolean {
  return value === "" || value === 0;
}

function decodeMapping(
  config: ProxyConfig,
  raw: Record<string, unknown>,
  schema: Schema,
  prefix: string,
  where: string,
): void {
  for (const [key, value] of Object.entries(raw)) {
    const field = prefix + key;
    const spec = schema[key];
    if (spec === undefined) throw new ConfigError(`Unknown field "${field}" in ${where}`);
    // A null is Go's "not set": the default stays.
    if (value === null) continue;
    if (isSection(spec)) {
      if (!isMapping(value)) {
        throw new ConfigError(`Invalid ${field} "${shown(value)}" in ${where}: expected a mapping`);
      }
      decodeMapping(config, value, spec.section, `${field}.`, where);
      continue;
    }
    const converted = convert(spec, value, where);
    if (!converted.ok) {
      throw new ConfigError(
        `Invalid ${field} "${shown(value)}" in ${where}: expected ${converted.expected}`,
      );
    }
    if (spec.zeroMeansDefault && isZero(converted.value)) continue;
    setPath(config, spec.target, converted.value);
  }
}

/**
 * Decodes the text of a KubeProxyConfiguration file into a defaulted ProxyConfig, each mode's
 * section defaulted by `options.modeSections`. `where` (the file's path) is used in error
 * messages. Throws ConfigError.
 */
export function decodeConfigFile(
  text: string,
  where: string,
  options: ModeSectionsOptions,
): ProxyConfig {
  let raw: unknown;
  try {
    raw = parse(text);
  } catch (err) {
    const reason = errorMessage(err).split("\n")[0];
    throw new ConfigError(`Cannot parse config file "${where}": ${reason}`);
  }
  if (!isMapping(raw)) {
    throw new ConfigError(
      `Invalid config file "${where}": expected a ${CONFIG_KIND} mapping, got "${shown(raw)}"`,
    );
  }
  const { apiVersion, kind, ...fields } = raw;
  if (apiVersion !== CONFIG_API_VERSION) {
    throw new ConfigError(
      `Invalid apiVersion "${
        shown(apiVersion ?? "")
      }" in ${where}: expected "${CONFIG_API_VERSION}"`,
    );
  }
  if (kind !== CONFIG_KIND) {
    throw new ConfigError(
      `Invalid kind "${shown(kind ?? "")}" in ${where}: expected "${CONFIG_KIND}"`,
    );
  }
  const config = defaultConfig(options);
  // Empty means "default for the bind address family", decided after decoding.
  config.bindAddress = "";
  config.healthzBindAddress = "";
  config.metricsBindAddress = "";
  decodeMapping(config, fields, configSchema(options.modeSections), "", where);
  defaultBindAddresses(config);
  resolveModeFields(config, options);
  return config;
}
