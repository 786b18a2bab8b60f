/**
 * `deno task image`: the node image as an OCI layout folder and archive, built from Debian
 * packages (the cached base layer) and the program (the second layer), without a container
 * engine or a registry.
 */
import { type CommandRunner, denoCommandRunner } from "../../lib/exec/mod.ts";
import { baseRootfs, IMAGE_CACHE_DIR } from "./base_rootfs.ts";
import { ENTRYPOINT_PATH } from "./entrypoint.ts";
import { imageReference } from "./image_ref.ts";
import { gzipLayer, type LayerBlob, pruneLayerCache, writeLayerTar } from "./layer.ts";
import { ociArchitecture } from "./oci_layout.ts";
import { writeOciImage } from "./oci_writer.ts";
import { readPackageList } from "./package_list.ts";
import { REPO_ROOT, type StagedProgram, stageProgram } from "./stage_program.ts";

/** Options of buildImage; every field has a working default. */
export interface BuildImageOptions {
  /** Default the repository this file is in (ending in "/"). */
  readonly repoRoot?: string;
  /** Where oci/ and the archive go; default `<repoRoot>dist/image`. */
  readonly outDir?: string;
  readonly cacheDir?: string;
  /** Debian packages; default deploy/image/packages.txt. */
  readonly packages?: readonly string[];
  /** `--api-server` hosts the program may reach (see scripts/build.ts). */
  readonly apiServers?: readonly string[];
  readonly runner?: CommandRunner;
  /** Progress lines; default stderr. */
  readonly log?: (line: string) => void;
}

/** A built image. */
export interface BuiltImage {
  /** e.g. "localhost/deno-kube-proxy:0.1.0". */
  readonly reference: string;
  /** The OCI image layout folder. */
  readonly layoutDir: string;
  /** The OCI archive (a tar of layoutDir). */
  readonly archive: string;
  readonly manifestDigest: string;
  /** Base first. */
  readonly layers: readonly LayerBlob[];
  readonly program: StagedProgram;
  /** Whether the base filesystem had to be made (not from the cache). */
  readonly baseBuilt: boolean;
}

/** The image's PATH, Debian's default for root. */
export const IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/** Builds the image; a second build with the same inputs reuses every cached part. */
export async function buildImage(options: BuildImageOptions = {}): Promise<BuiltImage> {
  const repoRoot = options.repoRoot ?? REPO_ROOT;
  const cacheDir = options.cacheDir ?? IMAGE_CACHE_DIR;
  const outDir = options.outDir ?? `${repoRoot}dist/image`;
  const runner = options.runner ?? denoCommandRunner;
  const log = options.log ?? ((line: string) => console.error(line));
  const version = JSON.parse(await Deno.readTextFile(`${repoRoot}deno.json`)).version;
  const reference = imageReference(String(version));
  const packages = options.packages ?? await readPackageList();

  const base = await baseRootfs({ packages, cacheDir, runner, log });
  const baseLayer = await gzipLayer(base.tar, cacheDir, runner);

  const work = await Deno.makeTempDir({ dir: cacheDir, prefix: "program-" });
  let programLayer: LayerBlob;
  let program: StagedProgram;
  try {
    program = await stageProgram(`${work}/root`, {
      repoRoot,
      cacheDir,
      runner,
      apiServers: options.apiServers ?? [],
    });
    await writeLayerTar(`${work}/root`, `${work}/program.tar`, runner);
    programLayer = await gzipLayer(`${work}/program.tar`, cacheDir, runner);
  } finally {
    await Deno.remove(work, { recursive: true });
  }

  await Deno.mkdir(outDir, { recursive: true });
  const written = await writeOciImage({
    layoutDir: `${outDir}/oci`,
    archive: `${outDir}/deno-kube-proxy.oci.tar`,
    layers: [baseLayer, programLayer],
    reference,
    config: {
      architecture: ociArchitecture(Deno.build.target),
      entrypoint: [ENTRYPOINT_PATH],
      env: [`PATH=${IMAGE_PATH}`],
      labels: {
        "org.opencontainers.image.title": "deno-kube-proxy",
        "org.opencontainers.image.version": String(version),
      },
    },
  }, runner);
  await pruneLayerCache(cacheDir, [baseLayer, programLayer]);
  return {
    reference,
    layoutDir: written.layoutDir,
    archive: written.archive,
    manifestDigest: written.manifest.digest,
    layers: [baseLayer, programLayer],
    program,
    baseBuilt: base.built,
  };
}
