import assert from "node:assert/strict";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { flagTable } from "../../lib/config/_flag_table.ts";

Deno.test("flagTable() gives a shared flag every section's target, in the registry's order", () => {
  const table = flagTable(MODE_CONFIG_SECTIONS);
  assert.deepEqual(table.byName.get("masquerade-all")!.targets, [
    "iptables.masqueradeAll",
    "nftables.masqueradeAll",
  ]);
  assert.deepEqual(table.byName.get("iptables-sync-period")!.targets, [
    "iptables.syncPeriodMs",
    "nftables.syncPeriodMs",
  ]);
  assert.deepEqual(table.byName.get("ipvs-sync-period")!.targets, ["ipvs.syncPeriodMs"]);
});

Deno.test("flagTable() sorts each mode's flags among the mode-neutral ones by name", () => {
  const names = flagTable(MODE_CONFIG_SECTIONS).flags.map((f) => f.name);
  assert.deepEqual(names, [...names].sort());
  assert.ok(names.includes("ipvs-scheduler") && names.includes("proxy-mode"));
});

Deno.test("flagTable() refuses a flag two sections declare and a shared flag nobody declares", () => {
  const ipvs = MODE_CONFIG_SECTIONS.ipvs;
  assert.throws(
    () =>
      flagTable({
        ...MODE_CONFIG_SECTIONS,
        nftables: { ...MODE_CONFIG_SECTIONS.nftables, flags: ipvs.flags },
      }),
    /Flag "--ipvs-exclude-cidrs" is declared twice/,
  );
  assert.throws(
    () =>
      flagTable({
        ...MODE_CONFIG_SECTIONS,
        ipvs: { ...ipvs, sharedFlagTargets: { "no-such-flag": "ipvs.scheduler" } },
      }),
    /Mode ipvs shares unknown flag "--no-such-flag"/,
  );
});
