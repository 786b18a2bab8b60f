/** Finding and fetching the Debian packages the guest is built from (apt, never installed). */
import { type CommandRunner, runChecked } from "../../lib/exec/mod.ts";

/** The meta-package whose dependency names the current generic kernel package. */
export const KERNEL_META_PACKAGE = "linux-image-amd64";
/** Debian's statically linked busybox: the initramfs's only program. */
export const BUSYBOX_PACKAGE = "busybox-static";

/**
 * The kernel package `apt-cache depends linux-image-amd64` names, e.g.
 * "linux-image-6.1.0-56-amd64"; null when the output names none.
 */
export function parseKernelDepends(output: string): string | null {
  const m = /^\s*Depends:\s*(linux-image-\d+\.\d+\.\d+-\d+-amd64)\s*$/m.exec(output);
  return m ? m[1]! : null;
}

/** The kernel release of a package name: "linux-image-6.1.0-56-amd64" -> "6.1.0-56-amd64". */
export function kernelRelease(packageName: string): string {
  return packageName.replace(/^linux-image-/, "");
}

/** The current generic kernel package; runs `apt-get update` once if apt knows none yet. */
export async function resolveKernelPackage(runner: CommandRunner): Promise<string> {
  const ask = async () => {
    const out = await runner({ cmd: "apt-cache", args: ["depends", KERNEL_META_PACKAGE] });
    return out.code === 0 ? parseKernelDepends(out.stdout) : null;
  };
  const first = await ask();
  if (first !== null) return first;
  await runChecked(runner, { cmd: "apt-get", args: ["update", "-qq"] });
  const second = await ask();
  if (second === null) {
    throw new Error(
      `Cannot find the Debian kernel package: "apt-cache depends ${KERNEL_META_PACKAGE}" names no linux-image-*-amd64`,
    );
  }
  return second;
}

/** Downloads a package's .deb into `dir` (`apt-get download`), returning its path. */
export async function downloadPackage(
  runner: CommandRunner,
  pkg: string,
  dir: string,
): Promise<string> {
  // apt-get download writes into its working directory; the runner seam has none, so cd in sh.
  await runChecked(runner, {
    cmd: "sh",
    args: ["-c", 'cd "$1" && shift && exec "$@"', "sh", dir, "apt-get", "download", "-qq", pkg],
  });
  for await (const e of Deno.readDir(dir)) {
    if (e.isFile && e.name.startsWith(`${pkg}_`) && e.name.endsWith(".deb")) {
      return `${dir}/${e.name}`;
    }
  }
  throw new Error(`"apt-get download ${pkg}" left no ${pkg}_*.deb in "${dir}"`);
}

/** Unpacks a .deb's files into `dir` (`dpkg-deb -x`), as the package would install them. */
export async function unpackPackage(
  runner: CommandRunner,
  deb: string,
  dir: string,
): Promise<void> {
  await runChecked(runner, { cmd: "dpkg-deb", args: ["-x", deb, dir] });
}
