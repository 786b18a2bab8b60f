/** `--help` and `--version` output. */
import { featureGateHelpLines } from "./feature_gates.ts";
import { flagTable } from "./_flag_table.ts";
import { modeNames, type ModeSectionsOptions } from "./mode_section.ts";

/**
 * The version `--version` prints: the upstream kube-proxy release whose behaviour we match, then
 * our own release after "-deno.".
 */
export const VERSION = "v1.34.0-deno.0.1.0";

/**
 * The text `--help` prints: usage, then every flag (the mode-neutral ones and each mode's) with
 * its type, description and default.
 */
export function helpText(options: ModeSectionsOptions): string {
  const rows = flagTable(options.modeSections).flags.map((f) => {
    const names = f.shorthand !== undefined && f.shorthand !== f.name
      ? `-${f.shorthand}, --${f.name}`
      : f.name.length === 1
      ? `-${f.name}, --${f.name}`
      : `    --${f.name}`;
    const left = f.typeName === "" ? names : `${names} ${f.typeName}`;
    const def = f.defaultText === "" ? "" : ` (default ${f.defaultText})`;
    return [left, `${f.help}${def}`] as const;
  });
  const width = Math.max(...rows.map(([left]) => left.length)) + 3;
  const lines = rows.flatMap(([left, right]) => {
    const line = `  ${left.padEnd(width)}${right}`;
    if (!left.endsWith("--feature-gates name=bool,...")) return [line];
    // As upstream's help, the gates this binary knows, one a line.
    return [line, ...featureGateHelpLines().map((g) => `  ${" ".repeat(width)}  ${g}`)];
  });
  return [
    `deno-kube-proxy: a kube-proxy compatible Service proxy (${
      modeNames(options.modeSections).join(", ")
    }).`,
    "",
    "Usage:",
    "  deno-kube-proxy [flags]          run the proxy",
    "  deno-kube-proxy render [flags]   print the rules the chosen mode would apply, then exit",
    "  deno-kube-proxy trace --from IP --to IP:PORT[/tcp|udp|sctp] [--source pod|node|external]",
    "                                   say where such a packet goes and whether the node's rules",
    "                                   agree with the cluster state (exit 0 agree, 3 disagree)",
    "",
    "Flags:",
    ...lines,
    "",
  ].join("\n");
}
