import assert from "node:assert/strict";
import { newcArchive } from "../../../scripts/ipvs_vm/mod.ts";

interface Member {
  name: string;
  mode: number;
  data: string;
}

/** Reads a newc archive member by member, checking the 4-byte alignment the kernel needs. */
function readNewc(bytes: Uint8Array): Member[] {
  const text = new TextDecoder("latin1").decode(bytes);
  const members: Member[] = [];
  let at = 0;
  for (;;) {
    assert.equal(at % 4, 0);
    assert.equal(text.slice(at, at + 6), "070701");
    const field = (i: number) => parseInt(text.slice(at + 6 + i * 8, at + 14 + i * 8), 16);
    const mode = field(1), size = field(6), nameSize = field(11);
    const name = text.slice(at + 110, at + 110 + nameSize - 1);
    assert.equal(text[at + 110 + nameSize - 1], "\0");
    const dataAt = Math.ceil((at + 110 + nameSize) / 4) * 4;
    members.push({ name, mode, data: text.slice(dataAt, dataAt + size) });
    at = Math.ceil((dataAt + size) / 4) * 4;
    if (name === "TRAILER!!!") break;
  }
  assert.equal(at, bytes.length);
  return members;
}

Deno.test("newcArchive() writes directories, files and symlinks, aligned and trailed", () => {
  const archive = newcArchive([
    { kind: "dir", path: "bin" },
    { kind: "file", path: "bin/busybox", data: new TextEncoder().encode("abcde"), mode: 0o755 },
    { kind: "symlink", path: "bin/sh", target: "busybox" },
    { kind: "file", path: "init", data: new TextEncoder().encode("#!/bin/sh\n") },
  ]);
  assert.deepEqual(readNewc(archive), [
    { name: "bin", mode: 0o040755, data: "" },
    { name: "bin/busybox", mode: 0o100755, data: "abcde" },
    { name: "bin/sh", mode: 0o120777, data: "busybox" },
    { name: "init", mode: 0o100644, data: "#!/bin/sh\n" },
    { name: "TRAILER!!!", mode: 0, data: "" },
  ]);
});

Deno.test("newcArchive() refuses absolute paths", () => {
  assert.throws(() => newcArchive([{ kind: "dir", path: "/bin" }]), /Invalid cpio path "\/bin"/);
});
