/**
 * Installs deno-kube-proxy into a root directory (an image layer's staging folder, or a guest's
 * root filesystem): the compiled binary as ENTRYPOINT_PATH when dist/deno-kube-proxy exists,
 * else the Deno runtime, the sources and their vendored npm packages under PROGRAM_DIR with a
 * sh entrypoint that runs them.
 */
import { type CommandRunner, denoCommandRunner, runChecked } from "../../lib/exec/mod.ts";
import { IMAGE_CACHE_DIR } from "./base_rootfs.ts";
import { cachedDenoBinary } from "./deno_runtime.ts";
import { ENTRYPOINT_PATH, entrypointScript, PROGRAM_DIR, programPaths } from "./entrypoint.ts";
import { exists } from "./files.ts";
import { vendoredDenoDir } from "./vendor_deps.ts";

/** The repository root, ending in "/". */
export const REPO_ROOT = decodeURIComponent(new URL("../../", import.meta.url).pathname);

/** The sources the program runs from; tests, scripts and docs stay out. */
export const PROGRAM_SOURCES: readonly string[] = ["main.ts", "lib", "deno.json", "deno.lock"];

/** Options of stageProgram; every field has a working default. */
export interface StageProgramOptions {
  /** Default the repository this file is in. */
  readonly repoRoot?: string;
  /** A compiled binary to install; default `<repoRoot>dist/deno-kube-proxy` if it exists. */
  readonly compiledBinary?: string;
  /** `--api-server` hosts added to the network permission (sources only: a binary has its own). */
  readonly apiServers?: readonly string[];
  /** Where the Deno runtime and vendored packages are cached; default IMAGE_CACHE_DIR. */
  readonly cacheDir?: string;
  /** Deno version of the runtime installed; default the running one (it vendors the packages). */
  readonly denoVersion?: string;
  /** Rust target triple of the runtime; default the running Deno's. */
  readonly target?: string;
  readonly runner?: CommandRunner;
}

/** What stageProgram installed. */
export interface StagedProgram {
  /** "binary": the compiled executable; "sources": Deno + sources + vendored packages. */
  readonly kind: "binary" | "sources";
  /** The entry point inside the root (ENTRYPOINT_PATH). */
  readonly entrypoint: string;
}

/** Installs the program into `rootDir` (created if missing); see the file's comment. */
export async function stageProgram(
  rootDir: string,
  options: StageProgramOptions = {},
): Promise<StagedProgram> {
  const repoRoot = options.repoRoot ?? REPO_ROOT;
  const runner = options.runner ?? denoCommandRunner;
  const cacheDir = options.cacheDir ?? IMAGE_CACHE_DIR;
  const apiServers = options.apiServers ?? [];
  const binary = options.compiledBinary ?? `${repoRoot}dist/deno-kube-proxy`;
  const entry = `${rootDir}${ENTRYPOINT_PATH}`;
  await Deno.mkdir(entry.slice(0, entry.lastIndexOf("/")), { recursive: true });
  if (await exists(binary)) {
    if (apiServers.length > 0) {
      throw new Error(
        `Cannot add --api-server ${apiServers.join(",")} to the compiled "${binary}": its ` +
          "permissions are fixed at compile time; expected `deno task compile --api-server ...`",
      );
    }
    await Deno.copyFile(binary, entry);
    await Deno.chmod(entry, 0o755);
    return { kind: "binary", entrypoint: ENTRYPOINT_PATH };
  }

  const config = JSON.parse(await Deno.readTextFile(`${repoRoot}deno.json`));
  const permissions = config.permissions?.proxy;
  if (typeof permissions !== "object" || permissions === null) {
    throw new Error(`No "permissions.proxy" in "${repoRoot}deno.json": expected the proxy's set`);
  }
  const staged = programPaths(`${rootDir}${PROGRAM_DIR}`);
  const [deno, denoDir] = await Promise.all([
    cachedDenoBinary({
      version: options.denoVersion ?? Deno.version.deno,
      target: options.target ?? Deno.build.target,
      cacheDir,
      runner,
    }),
    vendoredDenoDir({ repoRoot, cacheDir, runner }),
  ]);
  await Promise.all(
    [staged.app, staged.denoDir, staged.deno.slice(0, staged.deno.lastIndexOf("/"))].map((d) =>
      Deno.mkdir(d, { recursive: true })
    ),
  );
  await Deno.copyFile(deno, staged.deno);
  await Deno.chmod(staged.deno, 0o755);
  await runChecked(runner, {
    cmd: "cp",
    args: ["-R", ...PROGRAM_SOURCES.map((s) => `${repoRoot}${s}`), `${staged.app}/`],
  });
  await runChecked(runner, { cmd: "cp", args: ["-R", `${denoDir}/npm`, `${staged.denoDir}/`] });
  await Deno.writeTextFile(entry, entrypointScript({ permissions, apiServers }));
  await Deno.chmod(entry, 0o755);
  return { kind: "sources", entrypoint: ENTRYPOINT_PATH };
}
