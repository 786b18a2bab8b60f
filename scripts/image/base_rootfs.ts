/**
 * The image's base: a Debian root filesystem made by mmdebstrap from a package list alone,
 * written as a tar once per set of inputs and reused from the cache afterwards.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { cacheKey } from "./cache_key.ts";
import { exists, replaceFile } from "./files.ts";

/** Where image artefacts are cached between runs unless told otherwise. */
export const IMAGE_CACHE_DIR = "/var/cache/deno-kube-proxy/image";

/** What a base root filesystem is made from; the cache key covers every field. */
export interface BaseRootfsSpec {
  /** Debian packages installed on top of the variant (deploy/image/packages.txt). */
  readonly packages: readonly string[];
  /** More packages, e.g. systemd for a guest that boots the filesystem. */
  readonly extraPackages?: readonly string[];
  /** Debian suite; default "bookworm". */
  readonly suite?: string;
  /** Debian mirror; default "http://deb.debian.org/debian". */
  readonly mirror?: string;
  /** mmdebstrap variant; default "essential" (Essential: yes packages, no apt). */
  readonly variant?: string;
}

/** Options of baseRootfs. */
export interface BaseRootfsOptions extends BaseRootfsSpec {
  /** Default IMAGE_CACHE_DIR. */
  readonly cacheDir?: string;
  readonly runner?: CommandRunner;
  /** Progress lines; default stderr. */
  readonly log?: (line: string) => void;
}

/** A cached base root filesystem. */
export interface BaseRootfs {
  /** The uncompressed, reproducible tar of the whole filesystem (entries start with "./"). */
  readonly tar: string;
  /** The hash of its inputs, part of the file name. */
  readonly key: string;
  /** Every package asked for, list first, then the extra ones. */
  readonly packages: readonly string[];
  /** False when the tar came from the cache. */
  readonly built: boolean;
}

/** Paths left out of every package (kept: copyright files), so the image carries no docs. */
export const EXCLUDED_PATHS: readonly string[] = [
  "/usr/share/doc/*",
  "/usr/share/man/*",
  "/usr/share/info/*",
  "/usr/share/locale/*",
  "/usr/share/lintian/*",
];

/** The spec with its defaults filled in and the packages merged (duplicates dropped). */
export function resolveBaseSpec(spec: BaseRootfsSpec): Required<BaseRootfsSpec> {
  return {
    packages: [...new Set([...spec.packages, ...spec.extraPackages ?? []])],
    extraPackages: [],
    suite: spec.suite ?? "bookworm",
    mirror: spec.mirror ?? "http://deb.debian.org/debian",
    variant: spec.variant ?? "essential",
  };
}

/**
 * The cache key of a spec: the same packages, suite, mirror and variant share one tar. The
 * mmdebstrap arguments are part of it, so a change in how the tar is made is never a stale hit.
 */
export function baseRootfsKey(spec: BaseRootfsSpec): string {
  const s = resolveBaseSpec(spec);
  return cacheKey({
    packages: s.packages,
    suite: s.suite,
    mirror: s.mirror,
    variant: s.variant,
    args: mmdebstrapArgs(s, "OUTPUT"),
  });
}

/**
 * The mmdebstrap arguments that write `spec`'s filesystem to `output` (a .tar): no docs, and no
 * host resolv.conf or hostname, so that with SOURCE_DATE_EPOCH set the tar is the same on every
 * machine. /dev keeps mmdebstrap's few standard nodes, as Debian's own images do; runtimes
 * mount their /dev over it.
 */
export function mmdebstrapArgs(spec: BaseRootfsSpec, output: string): string[] {
  const s = resolveBaseSpec(spec);
  return [
    "--quiet",
    `--variant=${s.variant}`,
    `--include=${s.packages.join(",")}`,
    ...EXCLUDED_PATHS.map((p) => `--dpkgopt=path-exclude=${p}`),
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    '--customize-hook=rm -f "$1/etc/resolv.conf" "$1/etc/hostname"',
    s.suite,
    output,
    s.mirror,
  ];
}

/** The base filesystem tar for `options`, from the cache or built by mmdebstrap (~15 s). */
export async function baseRootfs(options: BaseRootfsOptions): Promise<BaseRootfs> {
  const cacheDir = options.cacheDir ?? IMAGE_CACHE_DIR;
  const runner = options.runner ?? denoCommandRunner;
  const log = options.log ?? ((line: string) => console.error(line));
  const spec = resolveBaseSpec(options);
  const key = baseRootfsKey(spec);
  const tar = `${cacheDir}/base-${key}.tar`;
  if (await exists(tar)) return { tar, key, packages: spec.packages, built: false };
  await Deno.mkdir(cacheDir, { recursive: true });
  log(`image: mmdebstrap ${spec.variant} ${spec.suite} + ${spec.packages.join(" ")}`);
  const started = Date.now();
  await replaceFile(tar, async (tmp) => {
    await runChecked(runner, {
      cmd: "env",
      args: ["SOURCE_DATE_EPOCH=0", "mmdebstrap", ...mmdebstrapArgs(spec, tmp)],
    });
  });
  log(`image: base root filesystem ${tar} built in ${Date.now() - started} ms`);
  return { tar, key, packages: spec.packages, built: true };
}

/** Unpacks a root filesystem tar (plain or gzip) into `dir`, keeping owners and modes. */
export async function unpackRootfs(
  tar: string,
  dir: string,
  runner: CommandRunner = denoCommandRunner,
): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  await runChecked(runner, {
    cmd: "tar",
    args: ["-x", "-f", tar, "-C", dir, "--numeric-owner", "--same-permissions"],
  });
}
