import assert from "node:assert/strict";
import { baseRootfsKey, readPackageList } from "../../../scripts/image/mod.ts";
import {
  GUEST_EXTRA_PACKAGES,
  GUEST_HOSTNAME,
  prepareSystemdRoot,
  writeGuestRootFiles,
} from "../../../scripts/systemd_vm/mod.ts";

Deno.test("writeGuestRootFiles() writes text and symlinks over what the packages put there", async () => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${root}/etc/systemd/system`, { recursive: true });
    await Deno.writeTextFile(`${root}/etc/hostname`, "vm\n");
    await Deno.symlink(
      "/lib/systemd/system/graphical.target",
      `${root}/etc/systemd/system/default.target`,
    );
    await writeGuestRootFiles(root, [
      { path: "etc/hostname", text: "guest\n" },
      {
        path: "etc/systemd/system/default.target",
        symlink: "/lib/systemd/system/multi-user.target",
      },
      { path: "etc/systemd/system/new.wants/a.service", symlink: "/dev/null" },
    ]);
    assert.equal(await Deno.readTextFile(`${root}/etc/hostname`), "guest\n");
    assert.equal(
      await Deno.readLink(`${root}/etc/systemd/system/default.target`),
      "/lib/systemd/system/multi-user.target",
    );
    assert.equal(
      await Deno.readLink(`${root}/etc/systemd/system/new.wants/a.service`),
      "/dev/null",
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

async function tar(dir: string, out: string): Promise<void> {
  const res = await new Deno.Command("tar", { args: ["-c", "-f", out, "-C", dir, "."] }).output();
  assert.equal(res.code, 0, new TextDecoder().decode(res.stderr));
}

Deno.test("prepareSystemdRoot() unpacks the cached base once, adds the guest's files, drops stale entries", async () => {
  const cacheDir = await Deno.makeTempDir();
  try {
    // A cached base tar under scripts/image's name for the guest's packages: nothing to build.
    const key = baseRootfsKey({
      packages: await readPackageList(),
      extraPackages: GUEST_EXTRA_PACKAGES,
    });
    const src = `${cacheDir}/src`;
    await Deno.mkdir(`${src}/usr/bin`, { recursive: true });
    await Deno.writeTextFile(`${src}/usr/bin/marker`, "from the base\n");
    await tar(src, `${cacheDir}/base-${key}.tar`);
    await Deno.mkdir(`${cacheDir}/root-0123456789abcdef`);
    await Deno.writeTextFile(`${cacheDir}/base-0123456789abcdef.tar`, "");
    const lines: string[] = [];

    const root = await prepareSystemdRoot({ cacheDir, log: (l) => lines.push(l) });
    assert.match(root, /\/root-[0-9a-f]{16}$/);
    assert.equal(await Deno.readTextFile(`${root}/usr/bin/marker`), "from the base\n");
    assert.equal(await Deno.readTextFile(`${root}/etc/hostname`), `${GUEST_HOSTNAME}\n`);
    const names = [];
    for await (const e of Deno.readDir(cacheDir)) names.push(e.name);
    assert.deepEqual(names.sort(), [`base-${key}.tar`, root.slice(cacheDir.length + 1), "src"]);
    assert.equal(lines.length, 1);

    // The second call finds it.
    assert.equal(await prepareSystemdRoot({ cacheDir, log: (l) => lines.push(l) }), root);
    assert.equal(lines.length, 1);
  } finally {
    await Deno.remove(cacheDir, { recursive: true });
  }
});
