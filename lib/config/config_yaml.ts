/** Writes a ProxyConfig back out as a v1alpha1 KubeProxyConfiguration, for `--write-config-to`. */
import { stringify } from "yaml";
import { formatDuration } from "./duration.ts";
import {
  CONFIG_API_VERSION,
  CONFIG_KIND,
  configSchema,
  type FieldSpec,
  getPath,
  isSection,
  type Schema,
} from "./schema.ts";
import type { ModeSectionsOptions } from "./mode_section.ts";
import type { ProxyConfig, VModuleItem } from "./types.ts";

function encodeField(spec: FieldSpec, value: unknown): unknown {
  switch (spec.kind) {
    case "duration":
    case "durationOrNanos":
      return formatDuration(value as number);
    case "commaList":
      return (value as string[]).join(",");
    case "stringList":
      // Go writes an unset slice as null.
      return (value as string[]).length === 0 ? null : [...(value as string[])];
    case "vmodule":
      return (value as VModuleItem[]).map((v) => ({
        filePath: v.filePath,
        verbosity: v.verbosity,
      }));
    case "boolMap":
      return { ...(value as Record<string, boolean>) };
    default:
      return value;
  }
}

function isEmpty(value: unknown): boolean {
  if (value === false || value === "" || value === 0 || value === null) return true;
  if (Array.isArray(value)) return value.length === 0;
  return typeof value === "object" && value !== null && Object.keys(value).length === 0;
}

function encodeSection(config: ProxyConfig, schema: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) {
    if (isSection(spec)) {
      out[key] = encodeSection(config, spec.section);
      continue;
    }
    const value = encodeField(spec, getPath(config, spec.target));
    if (spec.omitEmpty && isEmpty(value)) continue;
    out[key] = value;
  }
  return out;
}

/**
 * The configuration as v1alpha1 YAML with Go duration strings and keys sorted as upstream writes
 * them. Our additions (manifests, node IPs, master) are not part of the file format and are left
 * out; the output decodes back to the same configuration. Each mode's section is written as
 * `options.modeSections` declares its fields.
 */
export function configToYaml(config: ProxyConfig, options: ModeSectionsOptions): string {
  const doc = {
    apiVersion: CONFIG_API_VERSION,
    kind: CONFIG_KIND,
    ...encodeSection(config, configSchema(options.modeSections)),
  };
  return stringify(doc, { sortMapEntries: true, lineWidth: 0 });
}
