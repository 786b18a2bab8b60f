import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { ConfigError } from "../../lib/config/mod.ts";
import { parseFlags } from "../../lib/config/_flags.ts";
import { flagTable } from "../../lib/config/_flag_table.ts";

const TABLE = flagTable(MODE_CONFIG_SECTIONS);

Deno.test("parseFlags() takes the next argument as a value even when it starts with a dash", () => {
  assert.equal(parseFlags(["--oom-score-adj", "-5"], TABLE).values.get("oom-score-adj"), -5);
});

Deno.test("parseFlags() does not let a boolean consume the next argument", () => {
  const parsed = parseFlags(["--masquerade-all", "render"], TABLE);
  assert.equal(parsed.values.get("masquerade-all"), true);
  assert.deepEqual(parsed.positionals, ["render"]);
});

Deno.test("parseFlags() treats everything after -- as positional", () => {
  assert.deepEqual(parseFlags(["-v=1", "--", "--v=2", "x"], TABLE).positionals, ["--v=2", "x"]);
});

Deno.test("parseFlags() merges repeated --feature-gates", () => {
  const gates =
    parseFlags(["--feature-gates=A=true", "--feature-gates=B=false,A=false"], TABLE).values;
  assert.deepEqual(gates.get("feature-gates"), { A: false, B: false });
});

Deno.test("parseFlags() reads empty list values as empty lists", () => {
  assert.deepEqual(
    parseFlags(["--nodeport-addresses="], TABLE).values.get("nodeport-addresses"),
    [],
  );
});

Deno.test("parseFlags() accepts hex integers as Go's strconv does", () => {
  assert.equal(
    parseFlags(["--iptables-masquerade-bit=0xe"], TABLE).values.get("iptables-masquerade-bit"),
    14,
  );
});

Deno.test("parseFlags() canonicalises --bind-address and --node-ip", () => {
  const v =
    parseFlags(["--bind-address=FD00::0001", "--node-ip=fd00:0:0::2,10.0.0.2"], TABLE).values;
  assert.equal(v.get("bind-address"), "fd00::1");
  assert.deepEqual(v.get("node-ip"), ["fd00::2", "10.0.0.2"]);
});

Deno.test("parseFlags() rejects -h with an attached value and an empty flag name", () => {
  assert.throws(() => parseFlags(["-hx"], TABLE), ConfigError);
  assert.throws(() => parseFlags(["--=x"], TABLE), /Unknown flag "--=x"/);
});

Deno.test("parseFlags() rejects an int32 out of range", () => {
  assert.throws(
    () => parseFlags(["--conntrack-min=2147483648"], TABLE),
    /Invalid --conntrack-min "2147483648": expected a 32-bit integer/,
  );
});
