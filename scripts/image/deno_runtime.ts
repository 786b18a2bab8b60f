/**
 * The Deno runtime the image runs the program with when there is no compiled binary: the
 * `deno` executable of npm's `@deno/<platform>` package (the npm registry is reachable where
 * dl.deno.land is not), fetched with `npm pack` once per version and kept in the cache.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { exists, replaceFile } from "./files.ts";

const NPM_PLATFORMS: Readonly<Record<string, string>> = {
  "x86_64-unknown-linux-gnu": "linux-x64-glibc",
  "aarch64-unknown-linux-gnu": "linux-arm64-glibc",
};

/** The npm package holding the `deno` executable for a Rust target triple. */
export function denoNpmPackage(target: string): string {
  const platform = NPM_PLATFORMS[target];
  if (platform === undefined) {
    throw new Error(
      `No npm Deno package for target "${target}": expected one of ${
        Object.keys(NPM_PLATFORMS).join(", ")
      }`,
    );
  }
  return `@deno/${platform}`;
}

/** Options of cachedDenoBinary. */
export interface DenoBinaryOptions {
  /** Deno version, e.g. "2.9.6" (the running Deno's, so the vendored cache matches). */
  readonly version: string;
  /** Rust target triple, e.g. Deno.build.target. */
  readonly target: string;
  readonly cacheDir: string;
  readonly runner?: CommandRunner;
}

/** The path of that Deno version's executable in the cache, fetching it first if needed. */
export async function cachedDenoBinary(o: DenoBinaryOptions): Promise<string> {
  const runner = o.runner ?? denoCommandRunner;
  const pkg = `${denoNpmPackage(o.target)}@${o.version}`;
  const dir = `${o.cacheDir}/deno-${o.version}-${o.target}`;
  const binary = `${dir}/deno`;
  if (await exists(binary)) return binary;
  await Deno.mkdir(o.cacheDir, { recursive: true });
  await replaceFile(dir, async (tmp) => {
    await Deno.mkdir(tmp, { recursive: true });
    const out = await runChecked(runner, {
      cmd: "npm",
      args: ["pack", pkg, "--json", "--silent", "--pack-destination", tmp],
    });
    const packed = JSON.parse(out) as { filename?: unknown }[];
    const filename = packed[0]?.filename;
    if (typeof filename !== "string") {
      throw new Error(`"npm pack ${pkg}" printed no file name: ${out.slice(0, 200)}`);
    }
    await runChecked(runner, {
      cmd: "tar",
      args: ["-x", "-z", "-f", `${tmp}/${filename}`, "-C", tmp, "--strip-components=1"],
    });
    await Deno.remove(`${tmp}/${filename}`);
    if (!await exists(`${tmp}/deno`)) throw new Error(`npm package "${pkg}" holds no "deno"`);
  });
  return binary;
}
