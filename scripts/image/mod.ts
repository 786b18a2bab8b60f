/**
 * Public face of scripts/image: the node image built from Debian packages and the program
 * (`deno task image`), and its parts for other builders of root filesystems (a guest's, say):
 * the package list, the cached base filesystem, and installing the program into a root.
 */
export * from "./base_rootfs.ts";
export * from "./build_image.ts";
export * from "./cache_key.ts";
export * from "./chroot.ts";
export * from "./deno_runtime.ts";
export * from "./digest.ts";
export * from "./entrypoint.ts";
export { exists } from "./files.ts";
export * from "./image_ref.ts";
export * from "./layer.ts";
export * from "./oci_archive.ts";
export * from "./oci_layout.ts";
export * from "./oci_writer.ts";
export * from "./package_list.ts";
export * from "./stage_program.ts";
export * from "./vendor_deps.ts";
