/**
 * The JSON documents of an OCI image (image-spec v1.1): config, manifest, and the image
 * layout's index.json naming it, so `podman load`, `ctr images import` and skopeo tag it.
 */

/** Media types used by this image. */
export const MEDIA_TYPES = {
  index: "application/vnd.oci.image.index.v1+json",
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layerGzip: "application/vnd.oci.image.layer.v1.tar+gzip",
} as const;

/** The annotation podman and skopeo read the image's name from. */
export const REF_NAME_ANNOTATION = "org.opencontainers.image.ref.name";
/** The annotation `ctr images import` reads the image's name from. */
export const CONTAINERD_NAME_ANNOTATION = "io.containerd.image.name";

/** A content descriptor: what a blob is, its digest and size. */
export interface Descriptor {
  readonly mediaType: string;
  readonly digest: string;
  readonly size: number;
  readonly annotations?: Readonly<Record<string, string>>;
}

/** What the image runs and is built from. */
export interface ImageConfigSpec {
  /** OCI architecture, e.g. "amd64". */
  readonly architecture: string;
  readonly entrypoint: readonly string[];
  /** Default arguments; none when the orchestrator always passes them (the DaemonSet does). */
  readonly cmd?: readonly string[];
  readonly env: readonly string[];
  /** Uncompressed layer digests, base first. */
  readonly diffIds: readonly string[];
  readonly labels?: Readonly<Record<string, string>>;
}

/** The OCI architecture of a Rust target triple. */
export function ociArchitecture(target: string): string {
  const arch = target.split("-")[0];
  if (arch === "x86_64") return "amd64";
  if (arch === "aarch64") return "arm64";
  throw new Error(`Unsupported target "${target}": expected x86_64-* or aarch64-*`);
}

/** The image config document; `created` is the epoch so the same inputs give the same digest. */
export function imageConfig(spec: ImageConfigSpec): unknown {
  return {
    created: "1970-01-01T00:00:00Z",
    architecture: spec.architecture,
    os: "linux",
    config: {
      Entrypoint: [...spec.entrypoint],
      ...(spec.cmd !== undefined ? { Cmd: [...spec.cmd] } : {}),
      Env: [...spec.env],
      ...(spec.labels !== undefined ? { Labels: { ...spec.labels } } : {}),
    },
    rootfs: { type: "layers", diff_ids: [...spec.diffIds] },
  };
}

/** The image manifest: the config and the layers, base first. */
export function imageManifest(config: Descriptor, layers: readonly Descriptor[]): unknown {
  return {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.manifest,
    config,
    layers: [...layers],
  };
}

/** The layout's index.json: one manifest, named `reference` for podman, skopeo and ctr. */
export function imageIndex(manifest: Descriptor, reference: string): unknown {
  return {
    schemaVersion: 2,
    mediaType: MEDIA_TYPES.index,
    manifests: [{
      ...manifest,
      annotations: { [CONTAINERD_NAME_ANNOTATION]: reference, [REF_NAME_ANNOTATION]: reference },
    }],
  };
}

/** The layout's `oci-layout` file. */
export const OCI_LAYOUT_FILE = { imageLayoutVersion: "1.0.0" };
