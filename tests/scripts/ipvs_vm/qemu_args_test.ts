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
