/**
 * The program's npm dependencies for the image: a DENO_DIR filled by `deno cache` of main.ts
 * with the frozen lock file, kept in the cache per lock file, import map and Deno version.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { cacheKey } from "./cache_key.ts";
import { exists, replaceFile } from "./files.ts";

/** Options of vendoredDenoDir. */
export interface VendorOptions {
  /** Repository root ending in "/" (main.ts, deno.json, deno.lock). */
  readonly repoRoot: string;
  readonly cacheDir: string;
  /** The deno that fills the cache; default the running one. */
  readonly deno?: string;
  readonly runner?: CommandRunner;
}

/** A DENO_DIR whose `npm/` folder holds every npm package main.ts loads. */
export async function vendoredDenoDir(o: VendorOptions): Promise<string> {
  const runner = o.runner ?? denoCommandRunner;
  const deno = o.deno ?? Deno.execPath();
  const config = JSON.parse(await Deno.readTextFile(`${o.repoRoot}deno.json`));
  const key = cacheKey({
    lock: await Deno.readTextFile(`${o.repoRoot}deno.lock`),
    imports: config.imports ?? {},
    deno: Deno.version.deno,
  });
  const dir = `${o.cacheDir}/deno-dir-${key}`;
  if (await exists(`${dir}/npm`)) return dir;
  await Deno.mkdir(o.cacheDir, { recursive: true });
  await replaceFile(dir, async (tmp) => {
    await runChecked(runner, {
      cmd: "env",
      args: [
        `DENO_DIR=${tmp}`,
        "DENO_NO_UPDATE_CHECK=1",
        deno,
        "cache",
        "--quiet",
        "--frozen",
        `--config=${o.repoRoot}deno.json`,
        `${o.repoRoot}main.ts`,
      ],
    });
    if (!await exists(`${tmp}/npm`)) throw new Error(`"deno cache" left no npm folder in "${tmp}"`);
  });
  return dir;
}
