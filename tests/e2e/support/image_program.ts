/**
 * The node image as the real-kernel tests run it: built by `deno task image`'s builder
 * (cached), its root filesystem unpacked from the OCI archive (layers in manifest order), and
 * the entry point run from that root in a chroot with the DaemonSet's mounts: the manifest
 * folder (read-only, as a ConfigMap volume), /run/xtables.lock and /lib/modules.
 */
import {
  buildImage,
  type BuiltImage,
  type ChrootBind,
  chrootCommand,
  ENTRYPOINT_PATH,
  type OciArchiveImage,
  unpackOciArchive,
} from "../../../scripts/image/mod.ts";
import type { ProxyProgram } from "../../../scripts/netns/mod.ts";
import { MANIFEST_ROOT } from "./proxy_process.ts";

/** The host paths a proxy container sees, at the same paths. */
export const IMAGE_BINDS: readonly ChrootBind[] = [
  { path: MANIFEST_ROOT, readOnly: true },
  { path: "/run/xtables.lock", file: true },
  { path: "/lib/modules", readOnly: true },
];

/** An unpacked image: what was built and where its root filesystem is. */
export interface ImageRootfs {
  readonly built: BuiltImage;
  /** What the archive's index, manifest and config say. */
  readonly image: OciArchiveImage;
  readonly root: string;
  /** Removes the root filesystem. */
  remove(): Promise<void>;
}

/** Builds the image (cached parts reused) and unpacks its archive into a new folder. */
export async function unpackedImage(parent = "/tmp"): Promise<ImageRootfs> {
  const built = await buildImage({ log: (line) => console.log(line) });
  const root = await Deno.makeTempDir({ dir: parent, prefix: "deno-kube-proxy-image-root-" });
  try {
    const image = await unpackOciArchive(built.archive, root);
    return { built, image, root, remove: () => Deno.remove(root, { recursive: true }) };
  } catch (err) {
    await Deno.remove(root, { recursive: true }).catch(() => {});
    throw err;
  }
}

/** The image's entry point run from `root`, as the proxy of spawnProxy and runProxyOnce. */
export function imageProgram(root: string, binds = IMAGE_BINDS): ProxyProgram {
  return {
    cmd: "unshare",
    args: (args) => chrootCommand(root, [ENTRYPOINT_PATH, ...args], binds).args,
  };
}
