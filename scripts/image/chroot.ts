/**
 * Running a command from an unpacked image root filesystem the way a privileged host-network
 * container does, with no engine: `unshare --mount` (so every mount below vanishes with the
 * process), /proc, /sys and /dev mounted in the root, chosen host paths bound in (as a pod's
 * volumes are), then `chroot`. Only the root's programs and libraries run.
 */
import { shellQuote } from "../ipvs_vm/mod.ts";

/** A host path made visible at the same path inside the root. */
export interface ChrootBind {
  readonly path: string;
  /** A file (created empty where missing, like a FileOrCreate hostPath) rather than a folder. */
  readonly file?: boolean;
  readonly readOnly?: boolean;
}

/** The shell script that mounts, binds and execs `chroot "$root" "$@"` (root is "$1"). */
export function chrootScript(binds: readonly ChrootBind[] = []): string {
  const lines = [
    "set -e",
    "root=$1; shift",
    'mount -t proc proc "$root/proc"',
    'mount --rbind /sys "$root/sys"',
    'mount --rbind /dev "$root/dev"',
  ];
  for (const b of binds) {
    if (!b.path.startsWith("/") || b.path.split("/").includes("..")) {
      throw new Error(`Invalid bind path "${b.path}": expected an absolute path without ".."`);
    }
    const host = shellQuote(b.path);
    const inRoot = `"$root"${shellQuote(b.path)}`;
    lines.push(
      b.file === true
        ? `touch ${host}; mkdir -p "$(dirname ${inRoot})"; touch ${inRoot}`
        : `mkdir -p ${host} ${inRoot}`,
      `mount --bind ${host} ${inRoot}`,
    );
    if (b.readOnly === true) lines.push(`mount -o remount,bind,ro ${inRoot}`);
  }
  lines.push('exec chroot "$root" "$@"');
  return lines.join("\n");
}

/** The command (run as root, e.g. under `ip netns exec`) that runs `argv` inside `root`. */
export function chrootCommand(
  root: string,
  argv: readonly string[],
  binds: readonly ChrootBind[] = [],
): { cmd: string; args: string[] } {
  if (argv.length === 0) throw new Error(`No command to run in "${root}"`);
  return {
    cmd: "unshare",
    args: [
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      chrootScript(binds),
      "sh",
      root,
      ...argv,
    ],
  };
}
