/**
 * The systemd guest's root filesystem: the image's Debian packages plus systemd and the test
 * tools (scripts/image builds and caches that as a tar), unpacked once into a folder keyed by
 * its inputs, with the guest's own files (agent unit, host name, masked units) written in.
 * The program is not part of it: it comes as a separate layer on every boot.
 */
import { type CommandRunner, denoCommandRunner } from "../../lib/exec/mod.ts";
import { baseRootfs, cacheKey, exists, readPackageList, unpackRootfs } from "../image/mod.ts";
import { DEFAULT_SYSTEMD_CACHE_DIR, GUEST_EXTRA_PACKAGES } from "./boot_options.ts";
import { type GuestRootFile, guestRootFiles } from "./guest_root_files.ts";

/** Options of `prepareSystemdRoot`; every field has a working default. */
export interface SystemdRootOptions {
  readonly cacheDir?: string;
  readonly runner?: CommandRunner;
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

/** Prefix of the cached root folders in the cache folder; a cache key follows it. */
const ROOT_PREFIX = "root-";
const ROOT_NAME_RE = /^root-[0-9a-f]{16}$/;
/** scripts/image's base tars, as it names them in the cache folder it is given. */
const BASE_NAME_RE = /^base-[0-9a-f]{16}\.tar$/;

/** Writes `files` under `root`, replacing whatever is at their paths. */
export async function writeGuestRootFiles(
  root: string,
  files: readonly GuestRootFile[],
): Promise<void> {
  for (const file of files) {
    const path = `${root}/${file.path}`;
    await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    await Deno.remove(path).catch((err) => {
      if (!(err instanceof Deno.errors.NotFound)) throw err;
    });
    if ("text" in file) await Deno.writeTextFile(path, file.text);
    else await Deno.symlink(file.symlink, path);
  }
}

/**
 * Returns the folder of the guest's root, building it when its inputs changed (package
 * list, extra packages, guest files); older roots and base tars in the cache folder are
 * removed then.
 */
export async function prepareSystemdRoot(options: SystemdRootOptions = {}): Promise<string> {
  const cacheDir = options.cacheDir ?? DEFAULT_SYSTEMD_CACHE_DIR;
  const runner = options.runner ?? denoCommandRunner;
  const log = options.log ?? ((line: string) => console.error(`systemd-vm: ${line}`));
  const base = await baseRootfs({
    packages: await readPackageList(),
    extraPackages: GUEST_EXTRA_PACKAGES,
    cacheDir,
    runner,
    log,
  });
  const files = guestRootFiles();
  const root = `${cacheDir}/${ROOT_PREFIX}${cacheKey({ base: base.key, files })}`;
  if (await exists(root)) return root;
  log(`unpacking the guest's root into ${root}`);
  // Built aside and renamed into place: an interrupted build leaves no cache entry.
  const tmp = `${cacheDir}/.build-${Deno.pid}-${root.slice(root.lastIndexOf("/") + 1)}`;
  try {
    await unpackRootfs(base.tar, tmp, runner);
    await writeGuestRootFiles(tmp, files);
    await Deno.rename(tmp, root);
  } catch (err) {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
    throw err;
  }
  for await (const e of Deno.readDir(cacheDir)) {
    const path = `${cacheDir}/${e.name}`;
    const stale = (ROOT_NAME_RE.test(e.name) && path !== root) ||
      (BASE_NAME_RE.test(e.name) && path !== base.tar);
    if (stale) await Deno.remove(path, { recursive: true });
  }
  return root;
}
