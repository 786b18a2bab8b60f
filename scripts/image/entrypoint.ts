/**
 * The image's `/usr/local/bin/deno-kube-proxy` when no compiled binary is at hand: a sh script
 * that execs the Deno runtime beside the sources, with the same permission set and runtime
 * flags `deno task compile` bakes into the binary, and only the dependencies vendored with it.
 */
import { permissionFlags, type PermissionSet } from "../build.ts";
import { shellQuote } from "../ipvs_vm/mod.ts";
import { runtimeArgs } from "../runtime_flags.ts";

/** Where the program is installed inside the image. */
export const PROGRAM_DIR = "/opt/deno-kube-proxy";
/** The image's entry point: the compiled binary, or the script that runs the sources. */
export const ENTRYPOINT_PATH = "/usr/local/bin/deno-kube-proxy";

/** The program's files under a program folder. */
export interface ProgramPaths {
  /** The Deno executable. */
  readonly deno: string;
  /** main.ts, lib/, deno.json and deno.lock. */
  readonly app: string;
  /** The DENO_DIR holding the vendored npm packages. */
  readonly denoDir: string;
}

/** The paths of a program installed at `dir` (PROGRAM_DIR inside the image). */
export function programPaths(dir = PROGRAM_DIR): ProgramPaths {
  return { deno: `${dir}/bin/deno`, app: `${dir}/app`, denoDir: `${dir}/deno_dir` };
}

/** What the entrypoint runs. */
export interface EntrypointOptions {
  /** deno.json's `permissions.proxy`. */
  readonly permissions: PermissionSet;
  /** `--api-server` values: hosts added to the network permission, as for `deno task compile`. */
  readonly apiServers?: readonly string[];
  readonly paths?: ProgramPaths;
}

/**
 * The `deno` arguments that run the installed sources: only from the vendored cache
 * (`--cached-only`, lock file frozen), never prompting, under the compiled binary's flags.
 */
export function programRunArgs(o: EntrypointOptions): string[] {
  const { app } = o.paths ?? programPaths();
  return [
    "run",
    "--cached-only",
    "--frozen",
    `--config=${app}/deno.json`,
    "--no-prompt",
    "--quiet",
    ...runtimeArgs(),
    ...permissionFlags(o.permissions, `${app}/`, o.apiServers ?? []),
    `${app}/main.ts`,
  ];
}

/** The entrypoint script's text: environment, then `exec` so the program is PID 1's process. */
export function entrypointScript(o: EntrypointOptions): string {
  const paths = o.paths ?? programPaths();
  const argv = [paths.deno, ...programRunArgs(o)].map(shellQuote).join(" \\\n  ");
  return [
    "#!/bin/sh",
    "# deno-kube-proxy: the program's sources run by the Deno runtime beside them, under the",
    "# permission set and runtime flags of the compiled binary (scripts/image/entrypoint.ts).",
    `export DENO_DIR=${shellQuote(paths.denoDir)}`,
    "export DENO_NO_UPDATE_CHECK=1",
    `exec ${argv} \\\n  "$@"`,
    "",
  ].join("\n");
}
