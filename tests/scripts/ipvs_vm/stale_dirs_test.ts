import assert from "node:assert/strict";
import { removeStaleGuestDirs } from "../../../scripts/ipvs_vm/mod.ts";

Deno.test("removeStaleGuestDirs() removes only guest folders whose host process is gone", async () => {
  const parent = await Deno.makeTempDir({ prefix: "kvm-stale-" });
  try {
    const dead = new Deno.Command("true").spawn();
    await dead.status;
    for (const [name, pid] of [["ipvs-guest-dead", dead.pid], ["ipvs-guest-live", Deno.pid]]) {
      await Deno.mkdir(`${parent}/${name}`);
      await Deno.writeTextFile(`${parent}/${name}/host.pid`, `${pid}\n`);
    }
    await Deno.writeTextFile(`${parent}/ipvs-guest-dead.console`, "");
    await Deno.mkdir(`${parent}/ipvs-guest-nopid`);
    assert.deepEqual(await removeStaleGuestDirs(parent), [`${parent}/ipvs-guest-dead`]);
    const left = [...Deno.readDirSync(parent)].map((e) => e.name).sort();
    assert.deepEqual(left, ["ipvs-guest-live", "ipvs-guest-nopid"]);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});
