/**
 * Reading an OCI archive the way a container engine does: index.json -> manifest -> layers,
 * each checked against its digest and unpacked in order into a root filesystem.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { digestHex, fileDigest } from "./digest.ts";
import { MEDIA_TYPES } from "./oci_layout.ts";

/** What an image's manifest says, as read from an archive. */
export interface OciArchiveImage {
  readonly manifestDigest: string;
  /** Layer digests, base first. */
  readonly layers: readonly string[];
  /** The config's `config` section (Entrypoint, Cmd, Env, ...). */
  readonly config: Readonly<Record<string, unknown>>;
  /** The index's annotations of the manifest (the image's name). */
  readonly annotations: Readonly<Record<string, string>>;
}

function object(value: unknown, what: string): Record<string, unknown> {
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new Error(`Invalid ${what}: expected a JSON object, got ${JSON.stringify(value)}`);
  }
  return value as Record<string, unknown>;
}

function digestOf(value: unknown, what: string): string {
  const digest = object(value, what).digest;
  if (typeof digest !== "string") throw new Error(`Invalid ${what}: no digest`);
  digestHex(digest);
  return digest;
}

/** The one manifest descriptor of an index.json; throws unless there is exactly one. */
export function parseOciIndex(
  text: string,
): { digest: string; annotations: Record<string, string> } {
  const manifests = object(JSON.parse(text), "index.json").manifests;
  if (!Array.isArray(manifests) || manifests.length !== 1) {
    throw new Error(
      `Invalid index.json: expected exactly one manifest, got ${JSON.stringify(manifests)}`,
    );
  }
  const m = object(manifests[0], "index.json manifest");
  if (m.mediaType !== MEDIA_TYPES.manifest) {
    throw new Error(`Unsupported manifest media type "${m.mediaType}" in index.json`);
  }
  const annotations = (m.annotations ?? {}) as Record<string, string>;
  return { digest: digestOf(m, "index.json manifest"), annotations };
}

/** The config digest and layer digests (base first) of an image manifest. */
export function parseOciManifest(text: string): { config: string; layers: string[] } {
  const m = object(JSON.parse(text), "image manifest");
  if (!Array.isArray(m.layers) || m.layers.length === 0) {
    throw new Error(`Invalid image manifest: expected layers, got ${JSON.stringify(m.layers)}`);
  }
  const layers = m.layers.map((l, i) => {
    const type = object(l, `layer ${i}`).mediaType;
    if (type !== MEDIA_TYPES.layerGzip) {
      throw new Error(`Unsupported layer ${i} media type "${type}": expected gzip layers`);
    }
    return digestOf(l, `layer ${i}`);
  });
  return { config: digestOf(m.config, "manifest config"), layers };
}

/** A path of a layer's file list that is an OCI whiteout (a deletion of a lower layer's file). */
export function findWhiteout(listing: string): string | undefined {
  return listing.split("\n").find((p) => /(^|\/)\.wh\./.test(p));
}

async function member(runner: CommandRunner, archive: string, name: string): Promise<string> {
  return await runChecked(runner, { cmd: "tar", args: ["-x", "-O", "-f", archive, name] });
}

/** Reads index.json, the manifest and the config from an OCI archive. */
export async function readOciArchive(
  archive: string,
  runner: CommandRunner = denoCommandRunner,
): Promise<OciArchiveImage> {
  const index = parseOciIndex(await member(runner, archive, "index.json"));
  const manifest = parseOciManifest(
    await member(runner, archive, `blobs/sha256/${digestHex(index.digest)}`),
  );
  const config = object(
    JSON.parse(await member(runner, archive, `blobs/sha256/${digestHex(manifest.config)}`)),
    "image config",
  );
  return {
    manifestDigest: index.digest,
    layers: manifest.layers,
    config: object(config.config ?? {}, "image config's config"),
    annotations: index.annotations,
  };
}

/**
 * Unpacks the image in an OCI archive into `dir`: each layer, base first, taken from the
 * archive, checked against its digest and extracted over the ones before. Layers with
 * whiteouts are refused (this image has none; honouring them is a container engine's job).
 */
export async function unpackOciArchive(
  archive: string,
  dir: string,
  runner: CommandRunner = denoCommandRunner,
): Promise<OciArchiveImage> {
  const image = await readOciArchive(archive, runner);
  await Deno.mkdir(dir, { recursive: true });
  const tmp = await Deno.makeTempDir({ prefix: "oci-layers-" });
  try {
    for (const layer of image.layers) {
      const name = `blobs/sha256/${digestHex(layer)}`;
      await runChecked(runner, { cmd: "tar", args: ["-x", "-f", archive, "-C", tmp, name] });
      const { digest } = await fileDigest(`${tmp}/${name}`);
      if (digest !== layer) {
        throw new Error(`Layer "${name}" of "${archive}" has digest ${digest}: expected ${layer}`);
      }
      const listing = await runChecked(runner, {
        cmd: "tar",
        args: ["-x", "-z", "-v", "-f", `${tmp}/${name}`, "-C", dir, "--numeric-owner", "-p"],
      });
      const whiteout = findWhiteout(listing);
      if (whiteout !== undefined) {
        throw new Error(`Layer ${layer} of "${archive}" has whiteout "${whiteout}": unsupported`);
      }
      await Deno.remove(`${tmp}/${name}`);
    }
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
  return image;
}
