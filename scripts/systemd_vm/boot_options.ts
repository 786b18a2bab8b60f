/**
 * How the systemd guest boots (pure data): the IPVS guest's kernel and initramfs machinery,
 * with /init handing over to systemd instead of the command agent, and the program stacked as
 * its own read-only layer over the cached package root.
 */
import { DEFAULT_INIT_OPTIONS, type InitScriptOptions } from "../ipvs_vm/mod.ts";

/** Where the systemd guest's package roots are cached between runs unless told otherwise. */
export const DEFAULT_SYSTEMD_CACHE_DIR = "/var/cache/deno-kube-proxy/systemd-vm";

/** 9p tag of the program layer (the project's sources change every commit, the root does not). */
export const PROGRAM_TAG = "program";

/** /init options: systemd as PID 1, the program layer over the package root. */
export const SYSTEMD_INIT_OPTIONS: InitScriptOptions = {
  ...DEFAULT_INIT_OPTIONS,
  extraLowerTags: [PROGRAM_TAG],
  exec: "/sbin/init",
};

/** Kernel command line additions: systemd reports only failures on the console. */
export const SYSTEMD_KERNEL_ARGS: readonly string[] = ["systemd.show_status=error"];

/**
 * Packages the guest needs on top of the image's list: systemd as init, and the tools the
 * tests drive it with (curl for HTTP, socat as the pods' echo servers).
 */
export const GUEST_EXTRA_PACKAGES: readonly string[] = ["systemd", "systemd-sysv", "curl", "socat"];

/** The environment of the host's commands in the guest (its own root, not the host's). */
export const SYSTEMD_GUEST_ENV: Readonly<Record<string, string>> = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  HOME: "/root",
  SYSTEMD_PAGER: "",
  SYSTEMD_COLORS: "0",
};
