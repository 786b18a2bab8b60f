/**
 * Writes an OCI image layout folder (oci-layout, index.json, blobs/sha256/*) and the OCI
 * archive operators load: a reproducible tar of that folder.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { digestHex, sha256Digest } from "./digest.ts";
import { replaceFile } from "./files.ts";
import { type LayerBlob, reproducibleTarArgs } from "./layer.ts";
import {
  type Descriptor,
  imageConfig,
  type ImageConfigSpec,
  imageIndex,
  imageManifest,
  MEDIA_TYPES,
  OCI_LAYOUT_FILE,
} from "./oci_layout.ts";

/** What to write. */
export interface OciImageSpec {
  /** The image layout folder; replaced as a whole. */
  readonly layoutDir: string;
  /** The .tar of the layout folder. */
  readonly archive: string;
  /** Base first. */
  readonly layers: readonly LayerBlob[];
  readonly config: Omit<ImageConfigSpec, "diffIds">;
  /** e.g. "localhost/deno-kube-proxy:0.1.0". */
  readonly reference: string;
}

/** The written image: its manifest's descriptor and where it is. */
export interface WrittenImage {
  readonly manifest: Descriptor;
  readonly layoutDir: string;
  readonly archive: string;
}

const encoder = new TextEncoder();

/** A JSON document as blob bytes and its descriptor. */
function jsonBlob(mediaType: string, doc: unknown): { bytes: Uint8Array; descriptor: Descriptor } {
  const bytes = encoder.encode(JSON.stringify(doc));
  return { bytes, descriptor: { mediaType, digest: sha256Digest(bytes), size: bytes.length } };
}

/** Puts a layer into the blobs folder: a hard link to the cached file, or a copy across devices. */
async function placeLayer(layer: LayerBlob, blobs: string): Promise<void> {
  const target = `${blobs}/${digestHex(layer.digest)}`;
  try {
    await Deno.link(layer.path, target);
  } catch (err) {
    if (err instanceof Deno.errors.AlreadyExists) return;
    await Deno.copyFile(layer.path, target);
  }
}

/** Writes the layout folder and the archive; same inputs, same bytes. */
export async function writeOciImage(
  spec: OciImageSpec,
  runner: CommandRunner = denoCommandRunner,
): Promise<WrittenImage> {
  const config = jsonBlob(
    MEDIA_TYPES.config,
    imageConfig({ ...spec.config, diffIds: spec.layers.map((l) => l.diffId) }),
  );
  const manifest = jsonBlob(
    MEDIA_TYPES.manifest,
    imageManifest(
      config.descriptor,
      spec.layers.map((l) => ({
        mediaType: MEDIA_TYPES.layerGzip,
        digest: l.digest,
        size: l.size,
      })),
    ),
  );
  const dir = spec.layoutDir;
  const blobs = `${dir}/blobs/sha256`;
  await Deno.remove(dir, { recursive: true }).catch((err) => {
    if (!(err instanceof Deno.errors.NotFound)) throw err;
  });
  await Deno.mkdir(blobs, { recursive: true });
  for (const blob of [config, manifest]) {
    await Deno.writeFile(`${blobs}/${digestHex(blob.descriptor.digest)}`, blob.bytes);
  }
  for (const layer of spec.layers) await placeLayer(layer, blobs);
  await Deno.writeTextFile(`${dir}/oci-layout`, JSON.stringify(OCI_LAYOUT_FILE));
  await Deno.writeTextFile(
    `${dir}/index.json`,
    JSON.stringify(imageIndex(manifest.descriptor, spec.reference)),
  );
  await replaceFile(spec.archive, async (tmp) => {
    await runChecked(runner, {
      cmd: "tar",
      args: reproducibleTarArgs(dir, tmp, ["oci-layout", "index.json", "blobs"]),
    });
  });
  return { manifest: manifest.descriptor, layoutDir: dir, archive: spec.archive };
}
