/** Public face of scripts/systemd_vm: a qemu guest booting systemd as PID 1 for unit tests. */
export * from "./boot_options.ts";
export * from "./guest.ts";
export * from "./guest_root.ts";
export * from "./guest_root_files.ts";
