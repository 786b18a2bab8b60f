import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { helpText, VERSION } from "../../lib/config/mod.ts";
import { flagTable } from "../../lib/config/_flag_table.ts";

const FLAGS = flagTable(MODE_CONFIG_SECTIONS).flags;

Deno.test("helpText() lists every flag with a description", () => {
  const text = helpText({ modeSections: MODE_CONFIG_SECTIONS });
  for (const f of FLAGS) {
    const line = text.split("\n").find((l) => new RegExp(`^ +(-., )?--${f.name} `).test(l));
    assert.ok(line !== undefined, `--${f.name} missing from help`);
    assert.ok(f.help.length > 0 && line.includes(f.help), `--${f.name} has no description`);
  }
});

Deno.test("helpText() shows upstream's defaults", () => {
  const text = helpText({ modeSections: MODE_CONFIG_SECTIONS });
  assert.match(text, /--iptables-sync-period duration +.*\(default 30s\)/);
  assert.match(text, /--healthz-bind-address ip:port +.*\(default 0\.0\.0\.0:10256\)/);
  assert.match(text, /--oom-score-adj int32 +.*\(default -999\)/);
  assert.match(text, /-v, --v int +/);
  assert.match(text, /-h, --help +/);
  assert.match(text, /deno-kube-proxy render \[flags\]/);
});

Deno.test("VERSION names the upstream release it matches and our own version", () => {
  assert.match(VERSION, /^v1\.34\.\d+-deno\.\d+\.\d+\.\d+$/);
});
