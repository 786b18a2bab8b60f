import assert from "node:assert/strict";
import { qemuArgs } from "../../../scripts/ipvs_vm/mod.ts";

const BASE = { kernel: "/c/vmlinux", initrd: "/c/initrd", ioDir: "/tmp/io", consoleFile: "/tmp/c" };

Deno.test("qemuArgs() emulates (never KVM) and shares the root read-only, the io folder read-write", () => {
  const args = qemuArgs(BASE);
  const after = (flag: string) => args.filter((_, i) => args[i - 1] === flag);
  assert.deepEqual(after("-accel"), ["tcg"]);
  assert.ok(!args.some((a) => a.includes("kvm")));
  assert.deepEqual(after("-m"), ["1024"]);
  const [root, io] = after("-virtfs");
  assert.match(root!, /^local,path=\/,mount_tag=hostroot,.*readonly=on/);
  assert.match(io!, /^local,path=\/tmp\/io,mount_tag=guestio,/);
  assert.doesNotMatch(io!, /readonly/);
  assert.deepEqual(after("-serial"), ["file:/tmp/c"]);
});

Deno.test("qemuArgs() refuses a folder whose comma would split qemu's option", () => {
  assert.throws(() => qemuArgs({ ...BASE, ioDir: "/tmp/a,b" }), /Invalid ioDir "\/tmp\/a,b"/);
});

Deno.test("qemuArgs() shares extra folders read-only and appends kernel arguments", () => {
  const args = qemuArgs({
    ...BASE,
    rootDir: "/var/cache/root",
    extraShares: [{ tag: "program", path: "/tmp/program" }],
    kernelArgs: ["systemd.show_status=error"],
  });
  const after = (flag: string) => args.filter((_, i) => args[i - 1] === flag);
  const [root, io, program] = after("-virtfs");
  assert.match(root!, /^local,path=\/var\/cache\/root,mount_tag=hostroot,.*readonly=on/);
  assert.doesNotMatch(io!, /readonly/);
  assert.match(program!, /^local,path=\/tmp\/program,mount_tag=program,.*readonly=on/);
  assert.deepEqual(after("-append"), [
    "console=ttyS0 quiet panic=-1 rdinit=/init systemd.show_status=error",
  ]);
  assert.throws(
    () => qemuArgs({ ...BASE, extraShares: [{ tag: "p", path: "/a,b" }] }),
    /Invalid share "p" "\/a,b"/,
  );
});
