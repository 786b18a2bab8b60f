/**
 * What lib/config needs of each proxy mode's config section: its file fields, its flags, its
 * defaults, its start-up defaulting and its checks. The modes import lib/config, so lib/config cannot import them back:
 * each mode folder implements its section (lib/backends/<mode>/config_section.ts) and the mode
 * registry hands the set to lib/config through options (main.ts wires it).
 */
import type { FlagSpec } from "./_flag_table.ts";
import type { Schema } from "./schema.ts";
import type { ProxyConfig, ProxyModeName } from "./types.ts";

/**
 * One invalid value: the file field, the flag that sets it (if any) and what was expected, or
 * (for a value that is well-formed but cannot be honoured) why it is refused.
 */
export interface ValidationIssue {
  readonly field: string;
  readonly flag?: string;
  readonly value: string;
  readonly expected: string;
  /** Replaces "expected ..." in the message when set. */
  readonly reason?: string;
}

/** A mode's config section: the field of ProxyConfig the mode's name keys. */
export interface ModeConfigSection<M extends ProxyModeName> {
  /**
   * How the flags setting the section's sync periods begin (`${flagPrefix}-sync-period`);
   * nftables mode shares iptables' flags, as upstream.
   */
  readonly flagPrefix: string;
  /** The section's fields in the config file, under the mode's name (`${mode}:`). */
  readonly schema: Schema;
  /** The flags that set only this section (`--help` sorts them among the others by name). */
  readonly flags: readonly FlagSpec[];
  /**
   * Flags declared elsewhere that also set one of this section's fields: flag name to the
   * ProxyConfig path it sets here (nftables mode takes iptables' sync period flags, as upstream).
   */
  readonly sharedFlagTargets?: Readonly<Record<string, string>>;
  /** A fresh copy of the section's defaults, as upstream's SetDefaults leaves them. */
  defaults(): ProxyConfig[M];
  /**
   * Fills what the mode defaults from the rest of the configuration once flags and file are
   * merged (a platform default of upstream's); run only when the mode is the chosen one.
   */
  resolve?(config: ProxyConfig): void;
  /**
   * The problems with the section's own settings, in a stable order; run only when the mode is
   * the chosen one. lib/config checks the sync periods every section has.
   */
  check(section: ProxyConfig[M]): ValidationIssue[];
}

/** Every mode's config section, by mode name: what the mode registry supplies. */
export type ModeConfigSections = { readonly [M in ProxyModeName]: ModeConfigSection<M> };

/** The mode names of `modeSections`, in the registry's order: what `--proxy-mode` accepts. */
export function modeNames(modeSections: ModeConfigSections): readonly ProxyModeName[] {
  return Object.keys(modeSections) as ProxyModeName[];
}

/** What builds a configuration needs: each mode's config section, from the mode registry. */
export interface ModeSectionsOptions {
  readonly modeSections: ModeConfigSections;
}
