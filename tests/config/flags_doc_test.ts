/** docs/flags.md lists exactly the flags the flag table knows, so the two cannot drift. */
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { flagTable } from "../../lib/config/_flag_table.ts";

const FLAGS = flagTable(MODE_CONFIG_SECTIONS).flags;

const DOC = new URL("../../docs/flags.md", import.meta.url);

/** The flag names in the first cell of each table row (`--name` or `-x`). */
function documentedFlags(text: string): string[] {
  const names: string[] = [];
  for (const line of text.split("\n")) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (first === undefined) continue;
    // `-v`, `--v` is one row naming one flag.
    names.push(...new Set([...first.matchAll(/`--?([a-z][a-z0-9-]*)`/g)].map((m) => m[1]!)));
  }
  return names;
}

Deno.test("docs/flags.md has one row per flag of the flag table, and no other", async () => {
  const documented = documentedFlags(await Deno.readTextFile(DOC));
  const shorthands = new Map(FLAGS.flatMap((f) => f.shorthand ? [[f.shorthand, f.name]] : []));
  const long = documented.map((n) => shorthands.get(n) ?? n);
  const known = FLAGS.map((f) => f.name);
  assert.deepEqual([...new Set(long)].sort(), [...known].sort());
  assert.equal(new Set(documented).size, documented.length, "no flag listed twice");
});

Deno.test("docs/flags.md says same, refused or ours for every row", async () => {
  for (const line of (await Deno.readTextFile(DOC)).split("\n")) {
    const cells = line.split(" | ");
    if (!line.startsWith("| `") || cells.length < 3) continue;
    assert.match(cells.at(-1)!, /^(same|refused|ours)/, line);
  }
});
