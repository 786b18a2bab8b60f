/** Public face of scripts/ipvs_vm: a qemu guest with a real IPVS kernel for the IPVS tests. */
export * from "./cpio.ts";
export * from "./debian_packages.ts";
export * from "./file_tail.ts";
export * from "./guest.ts";
export * from "./guest_init.ts";
export * from "./guest_request.ts";
export * from "./modules.ts";
export * from "./prepare.ts";
export * from "./qemu_args.ts";
export * from "./stale_dirs.ts";
export * from "./vmlinux.ts";
