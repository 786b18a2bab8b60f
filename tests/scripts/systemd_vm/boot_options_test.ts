import assert from "node:assert/strict";
import { DEFAULT_INIT_OPTIONS, initScript } from "../../../scripts/ipvs_vm/mod.ts";
import { PROGRAM_TAG, SYSTEMD_INIT_OPTIONS } from "../../../scripts/systemd_vm/mod.ts";

Deno.test("SYSTEMD_INIT_OPTIONS: /init hands over to systemd with the program layer on top", () => {
  const init = initScript(SYSTEMD_INIT_OPTIONS);
  assert.match(init, new RegExp(`ro,cache=loose ${PROGRAM_TAG} /lower1 `));
  assert.match(init, /lowerdir=\/lower1:\/lower,upperdir=/);
  assert.match(init, /exec switch_root \/newroot \/sbin\/init\n$/);
  // Its own initramfs: the IPVS guest's /init, and so its cache key, stay as they are.
  assert.notEqual(init, initScript(DEFAULT_INIT_OPTIONS));
  assert.match(initScript(DEFAULT_INIT_OPTIONS), /switch_root \/newroot \/bin\/bash /);
});
