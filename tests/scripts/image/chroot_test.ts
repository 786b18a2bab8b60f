import assert from "node:assert/strict";
import { chrootCommand, chrootScript } from "../../../scripts/image/mod.ts";

Deno.test("chrootCommand() runs the script under unshare --mount with the root and argv after it", () => {
  const { cmd, args } = chrootCommand("/r", ["/usr/local/bin/x", "--v=2"]);
  assert.equal(cmd, "unshare");
  assert.deepEqual(args.slice(0, 5), ["--mount", "--propagation", "private", "sh", "-c"]);
  assert.deepEqual(args.slice(6), ["sh", "/r", "/usr/local/bin/x", "--v=2"]);
  assert.throws(() => chrootCommand("/r", []), /No command to run in "\/r"/);
});

Deno.test("chrootScript() mounts proc, sys and dev, binds each path, then execs chroot", () => {
  const script = chrootScript([
    { path: "/tmp/m", readOnly: true },
    { path: "/run/xtables.lock", file: true },
  ]).split("\n");
  assert.ok(script.includes('mount -t proc proc "$root/proc"'));
  assert.ok(script.includes(`mount --bind '/tmp/m' "$root"'/tmp/m'`));
  assert.ok(script.includes(`mount -o remount,bind,ro "$root"'/tmp/m'`));
  assert.ok(script.includes(`mount --bind '/run/xtables.lock' "$root"'/run/xtables.lock'`));
  assert.equal(
    script.filter((l) => l.startsWith("mount -o remount")).length,
    1,
    "only the read-only bind is remounted",
  );
  assert.equal(script.at(-1), 'exec chroot "$root" "$@"');
  assert.throws(() => chrootScript([{ path: "tmp/x" }]), /Invalid bind path "tmp\/x"/);
  assert.throws(() => chrootScript([{ path: "/a/../etc" }]), /Invalid bind path "\/a\/..\/etc"/);
});
