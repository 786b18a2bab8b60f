/**
 * Builds (once, then reuses from a cache folder) the guest's boot files: Debian's generic
 * kernel as an uncompressed ELF, and an initramfs of busybox, the needed modules and /init.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { type CpioEntry, newcArchive } from "./cpio.ts";
import {
  BUSYBOX_PACKAGE,
  downloadPackage,
  kernelRelease,
  resolveKernelPackage,
  unpackPackage,
} from "./debian_packages.ts";
import { initScript, type InitScriptOptions } from "./guest_init.ts";
import {
  GUEST_MODULES,
  moduleLoadOrder,
  moduleName,
  parseModulesBuiltin,
  parseModulesDep,
  stripModuleSignature,
} from "./modules.ts";
import { extractVmlinux } from "./vmlinux.ts";

/** Where boot files are kept between runs unless told otherwise. */
export const DEFAULT_CACHE_DIR = "/var/cache/deno-kube-proxy/ipvs-vm";

/** Options of `prepareGuestImage`; every field has a working default. */
export interface PrepareOptions {
  readonly cacheDir?: string;
  readonly runner?: CommandRunner;
  readonly modules?: readonly string[];
  readonly init?: InitScriptOptions;
  /** Progress lines (default: stderr). */
  readonly log?: (line: string) => void;
}

/** The files qemu boots. */
export interface GuestImage {
  readonly release: string;
  readonly kernel: string;
  readonly initrd: string;
}

/** The init options used unless told otherwise. */
export const DEFAULT_INIT_OPTIONS: InitScriptOptions = { msize: 262144, upperSize: "75%" };

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return false;
    throw err;
  }
}

async function shortHash(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].slice(0, 6).map((b) => b.toString(16).padStart(2, "0"))
    .join("");
}

/** Returns the cached .deb of `pkg`, downloading it if absent. */
async function cachedDeb(runner: CommandRunner, debDir: string, pkg: string): Promise<string> {
  await Deno.mkdir(debDir, { recursive: true });
  for await (const e of Deno.readDir(debDir)) {
    if (e.isFile && e.name.startsWith(`${pkg}_`) && e.name.endsWith(".deb")) {
      return `${debDir}/${e.name}`;
    }
  }
  const tmp = await Deno.makeTempDir({ dir: debDir, prefix: ".download-" });
  try {
    // Stale package lists name a file the mirror no longer has: refresh them once and retry.
    const deb = await downloadPackage(runner, pkg, tmp).catch(async () => {
      await runChecked(runner, { cmd: "apt-get", args: ["update", "-qq"] });
      return downloadPackage(runner, pkg, tmp);
    });
    const final = `${debDir}/${deb.slice(deb.lastIndexOf("/") + 1)}`;
    await Deno.rename(deb, final);
    return final;
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

/** The initramfs members: busybox, /init and the modules in load order (signatures stripped). */
export async function initramfsEntries(
  busybox: string,
  modulesRoot: string,
  modulePaths: readonly string[],
  init: string,
): Promise<CpioEntry[]> {
  const entries: CpioEntry[] = ["bin", "dev", "proc", "sys", "lower", "rw", "newroot", "modules"]
    .map((path) => ({ kind: "dir", path }));
  entries.push(
    { kind: "file", path: "bin/busybox", data: await Deno.readFile(busybox), mode: 0o755 },
    { kind: "file", path: "init", data: new TextEncoder().encode(init), mode: 0o755 },
  );
  for (const applet of ["sh", "mount", "umount", "insmod", "mkdir", "cat", "echo", "sleep"]) {
    entries.push({ kind: "symlink", path: `bin/${applet}`, target: "busybox" });
  }
  entries.push({ kind: "symlink", path: "bin/switch_root", target: "busybox" });
  for (const [i, rel] of modulePaths.entries()) {
    const data = stripModuleSignature(await Deno.readFile(`${modulesRoot}/${rel}`));
    const name = `${String(i).padStart(3, "0")}-${moduleName(rel)}.ko`;
    entries.push({ kind: "file", path: `modules/${name}`, data });
  }
  return entries;
}

/**
 * Returns the boot files for the current Debian generic kernel, building whatever is missing
 * from the cache: the packages are fetched with `apt-get download`, never installed.
 */
export async function prepareGuestImage(options: PrepareOptions = {}): Promise<GuestImage> {
  const cacheDir = options.cacheDir ?? DEFAULT_CACHE_DIR;
  const runner = options.runner ?? denoCommandRunner;
  const modules = options.modules ?? GUEST_MODULES;
  const log = options.log ?? ((line: string) => console.error(`ipvs-vm: ${line}`));
  const init = initScript(options.init ?? DEFAULT_INIT_OPTIONS);
  await Deno.mkdir(cacheDir, { recursive: true });

  const kernelPkg = await resolveKernelPackage(runner);
  const release = kernelRelease(kernelPkg);
  const kernel = `${cacheDir}/vmlinux-${release}`;
  const key = await shortHash(JSON.stringify({ release, modules, init, BUSYBOX_PACKAGE }));
  const initrd = `${cacheDir}/initramfs-${release}-${key}.cpio`;
  if (await exists(kernel) && await exists(initrd)) return { release, kernel, initrd };

  log(`building the guest's boot files for ${release} in ${cacheDir}`);
  const debDir = `${cacheDir}/debs`;
  const work = await Deno.makeTempDir({ dir: cacheDir, prefix: ".build-" });
  try {
    const [kernelDeb, busyboxDeb] = [
      await cachedDeb(runner, debDir, kernelPkg),
      await cachedDeb(runner, debDir, BUSYBOX_PACKAGE),
    ];
    await unpackPackage(runner, kernelDeb, `${work}/kernel`);
    await unpackPackage(runner, busyboxDeb, `${work}/busybox`);
    if (!await exists(kernel)) {
      await extractVmlinux(
        runner,
        `${work}/kernel/boot/vmlinuz-${release}`,
        `${work}/vmlinux`,
        work,
      );
      await Deno.rename(`${work}/vmlinux`, kernel);
    }
    const busybox = `${work}/busybox/bin/busybox`;
    const modulesRoot = `${work}/kernel/lib/modules/${release}`;
    await runChecked(runner, { cmd: busybox, args: ["depmod", "-b", `${work}/kernel`, release] });
    const order = moduleLoadOrder(
      parseModulesDep(await Deno.readTextFile(`${modulesRoot}/modules.dep`)),
      modules,
      parseModulesBuiltin(await Deno.readTextFile(`${modulesRoot}/modules.builtin`)),
    );
    const entries = await initramfsEntries(busybox, modulesRoot, order, init);
    await Deno.writeFile(`${work}/initramfs.cpio`, newcArchive(entries));
    await Deno.rename(`${work}/initramfs.cpio`, initrd);
    log(`built ${kernel} and ${initrd} (${order.length} modules)`);
    return { release, kernel, initrd };
  } finally {
    await Deno.remove(work, { recursive: true }).catch(() => {});
  }
}
