/**
 * Image layers: a folder written as a reproducible tar (sorted names, numeric root owner, mtime
 * 0), gzip-compressed once per content and kept in the cache by its uncompressed digest.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { digestHex, fileDigest } from "./digest.ts";
import { exists, replaceFile } from "./files.ts";

/** A compressed layer blob and the digests the manifest and the config name it by. */
export interface LayerBlob {
  /** The .tar.gz file. */
  readonly path: string;
  /** Digest of the compressed blob (the manifest's layer descriptor). */
  readonly digest: string;
  readonly size: number;
  /** Digest of the uncompressed tar (the config's rootfs.diff_ids). */
  readonly diffId: string;
}

/**
 * GNU tar arguments that write `members` of `dir` (default all of it) to `output` the same way
 * every time: sorted names, root as numeric owner, mtime 0, modes without group/other write.
 */
export function reproducibleTarArgs(
  dir: string,
  output: string,
  members: readonly string[] = ["."],
): string[] {
  return [
    "--create",
    `--file=${output}`,
    `--directory=${dir}`,
    "--format=gnu",
    "--sort=name",
    "--numeric-owner",
    "--owner=0",
    "--group=0",
    "--mtime=@0",
    "--mode=a+rX,go-w",
    ...members,
  ];
}

/** Writes `dir` as a reproducible layer tar at `output`. */
export async function writeLayerTar(
  dir: string,
  output: string,
  runner: CommandRunner = denoCommandRunner,
): Promise<void> {
  await runChecked(runner, { cmd: "tar", args: reproducibleTarArgs(dir, output) });
}

/**
 * The gzip layer of an uncompressed tar: from `cacheDir/layers/` when a tar with the same
 * digest was compressed before, else `gzip -n` (no name or time, so it is reproducible).
 */
export async function gzipLayer(
  tar: string,
  cacheDir: string,
  runner: CommandRunner = denoCommandRunner,
): Promise<LayerBlob> {
  const { digest: diffId } = await fileDigest(tar);
  const dir = `${cacheDir}/layers`;
  const path = `${dir}/${digestHex(diffId)}.tar.gz`;
  if (await exists(path)) {
    // Marks it used, for pruneLayerCache.
    const now = new Date();
    await Deno.utime(path, now, now);
  } else {
    await Deno.mkdir(dir, { recursive: true });
    await replaceFile(path, async (tmp) => {
      await runChecked(runner, {
        cmd: "sh",
        args: ["-c", 'gzip -n -c "$1" > "$2"', "sh", tar, tmp],
      });
    });
  }
  const { digest, size } = await fileDigest(path);
  return { path, digest, size, diffId };
}

/**
 * Removes cached layers other than `keep` last used over `maxAgeMs` ago: each change of the
 * sources makes a new program layer, and old ones would pile up. Recent ones stay, so a build
 * running meanwhile keeps its layer.
 */
export async function pruneLayerCache(
  cacheDir: string,
  keep: readonly LayerBlob[],
  maxAgeMs = 3_600_000,
  now = Date.now(),
): Promise<string[]> {
  const dir = `${cacheDir}/layers`;
  const kept = new Set(keep.map((l) => l.path));
  const removed: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    const path = `${dir}/${e.name}`;
    if (!e.isFile || kept.has(path)) continue;
    const { mtime } = await Deno.stat(path);
    if (mtime !== null && now - mtime.getTime() > maxAgeMs) {
      await Deno.remove(path).catch(() => {});
      removed.push(path);
    }
  }
  return removed;
}
