/** The qemu command line of the guest (pure). */
import { GUEST_LAYOUT } from "./guest_init.ts";

/** What the command line needs. */
export interface QemuArgsOptions {
  readonly kernel: string;
  readonly initrd: string;
  /** Host folder shared read-write for requests and responses. */
  readonly ioDir: string;
  /** File the guest's serial console is written to. */
  readonly consoleFile: string;
  /** Host folder shared read-only as the guest's root; default "/". */
  readonly rootDir?: string;
  /** Guest memory in MiB; default 1024. */
  readonly memoryMiB?: number;
  /** More host folders shared read-only, each under its 9p tag; default none. */
  readonly extraShares?: readonly { readonly tag: string; readonly path: string }[];
  /** Appended to the kernel command line; default none. */
  readonly kernelArgs?: readonly string[];
}

/**
 * Software emulation (TCG) on purpose: this machine's /dev/kvm is a paravirtual KVM that
 * cannot run Debian's kernel. One CPU: a second one only slows TCG down here.
 */
export function qemuArgs(opts: QemuArgsOptions): string[] {
  const { rootTag, ioTag } = GUEST_LAYOUT;
  const extraShares = opts.extraShares ?? [];
  const folders = [
    ["ioDir", opts.ioDir],
    ["rootDir", opts.rootDir ?? "/"],
    ...extraShares.map((s) => [`share "${s.tag}"`, s.path] as const),
  ] as const;
  for (const [what, path] of folders) {
    if (path.includes(",")) {
      throw new Error(`Invalid ${what} "${path}": qemu options cannot hold ","`);
    }
  }
  return [
    "-accel",
    "tcg",
    "-cpu",
    "max",
    "-smp",
    "1",
    "-m",
    String(opts.memoryMiB ?? 1024),
    "-nodefaults",
    "-display",
    "none",
    "-no-reboot",
    "-kernel",
    opts.kernel,
    "-initrd",
    opts.initrd,
    "-append",
    ["console=ttyS0 quiet panic=-1 rdinit=/init", ...(opts.kernelArgs ?? [])].join(" "),
    "-serial",
    `file:${opts.consoleFile}`,
    "-virtfs",
    `local,path=${
      opts.rootDir ?? "/"
    },mount_tag=${rootTag},security_model=none,readonly=on,multidevs=remap`,
    "-virtfs",
    `local,path=${opts.ioDir},mount_tag=${ioTag},security_model=none,multidevs=remap`,
    ...extraShares.flatMap((s) => [
      "-virtfs",
      `local,path=${s.path},mount_tag=${s.tag},security_model=none,readonly=on,multidevs=remap`,
    ]),
  ];
}
