import assert from "node:assert/strict";
import {
  AGENT_UNIT,
  agentUnit,
  GUEST_HOSTNAME,
  guestRootFiles,
  MASKED_UNITS,
} from "../../../scripts/systemd_vm/mod.ts";

Deno.test("agentUnit() runs the agent the host writes into the io share, at multi-user", () => {
  const unit = agentUnit();
  assert.match(unit, /^ExecStart=\/bin\/bash \/ipvs-guest-io\/agent\.sh$/m);
  assert.match(unit, /^RequiresMountsFor=\/ipvs-guest-io$/m);
  assert.match(unit, /^WantedBy=multi-user\.target$/m);
});

Deno.test("guestRootFiles() enables the agent, boots to multi-user, masks the idle units", () => {
  const files = new Map(guestRootFiles().map((f) => [f.path, f]));
  assert.deepEqual(files.get("etc/hostname"), {
    path: "etc/hostname",
    text: `${GUEST_HOSTNAME}\n`,
  });
  assert.deepEqual(files.get(`etc/systemd/system/multi-user.target.wants/${AGENT_UNIT}`), {
    path: `etc/systemd/system/multi-user.target.wants/${AGENT_UNIT}`,
    symlink: `/etc/systemd/system/${AGENT_UNIT}`,
  });
  const target = files.get("etc/systemd/system/default.target");
  assert.ok(target && "symlink" in target && target.symlink.endsWith("/multi-user.target"));
  assert.ok(MASKED_UNITS.includes("serial-getty@ttyS0.service"));
  for (const unit of MASKED_UNITS) {
    assert.deepEqual(files.get(`etc/systemd/system/${unit}`), {
      path: `etc/systemd/system/${unit}`,
      symlink: "/dev/null",
    });
  }
  assert.equal(files.size, guestRootFiles().length, "a path is written twice");
});
