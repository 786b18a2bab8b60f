/**
 * Compiles deno-kube-proxy into one executable with the project's single permission set.
 *
 *   deno task compile [--api-server HOST[:PORT]] [--output dist/deno-kube-proxy] [--target T]
 *
 * `--api-server` adds that host to the network permission, pinning the API server at build
 * time. `deno compile` needs `denort`, the runtime it wraps the program in, and downloads it
 * from dl.deno.land; where that is not reachable, set DENORT_BIN to a denort binary of the same
 * Deno version (the unzipped denort-<target>.zip of that release).
 */
import { parseArgs } from "node:util";
import { runtimeArgs } from "./runtime_flags.ts";

/** A permission set as deno.json's `permissions` holds it: kind -> true/false/list. */
export type PermissionSet = Readonly<Record<string, unknown>>;

/** Permission kinds in the order their flags are written. */
export const PERMISSION_KINDS = ["read", "write", "net", "env", "sys", "run", "ffi", "import"];

/** What `deno compile` is asked to build. */
export interface CompileOptions {
  readonly permissions: PermissionSet;
  /** Absolute path of the repository, ending in "/"; `./x` entries resolve against it. */
  readonly root: string;
  /** Extra `--allow-net` hosts (the pinned API server). */
  readonly apiServers?: readonly string[];
  readonly output: string;
  readonly target?: string;
  /** Files or folders left out of the executable (`--exclude`). */
  readonly exclude?: readonly string[];
}

/**
 * npm package folders (package name, folder inside it) left out of the executable: the program
 * never loads them, and deno compile 2.9 overflows its stack on them (denoland/deno#36746;
 * here bintrees' large extensionless test/perf/100k, reached via prom-client -> tdigest).
 */
export const NPM_COMPILE_EXCLUDES: readonly (readonly [string, string])[] = [["bintrees", "test"]];

/**
 * Turns an `--api-server` value into an `--allow-net` entry: `host`, `host:port` or
 * `[v6]:port`; a URL such as a kubeconfig's `server` is reduced to its host and port.
 */
export function apiServerHost(text: string): string {
  const expected = 'expected HOST[:PORT] or a URL such as "https://10.0.0.1:6443"';
  let host = text.trim();
  if (host.includes("://")) {
    try {
      host = new URL(host).host;
    } catch {
      throw new RangeError(`Invalid --api-server "${text}": ${expected}`);
    }
  }
  const valid = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:\d{1,5})?$/;
  const port = Number(host.match(/:(\d+)$/)?.[1] ?? "1");
  if (!valid.test(host) || port < 1 || port > 65535) {
    throw new RangeError(`Invalid --api-server "${text}": ${expected}`);
  }
  return host;
}

/** The `--allow-<kind>` flag for one permission-set entry plus extra values, if any. */
export function permissionFlag(
  kind: string,
  value: unknown,
  root: string,
  extra: readonly string[] = [],
): string[] {
  if (value === true) return [`--allow-${kind}`];
  if (value !== undefined && value !== false && !Array.isArray(value)) {
    throw new TypeError(
      `Invalid permission "${kind}" ${
        JSON.stringify(value)
      } in deno.json: expected true, false or a list`,
    );
  }
  const items = [...(Array.isArray(value) ? value : []), ...extra].map((v) => {
    const s = String(v);
    return (kind === "read" || kind === "write") && s.startsWith("./") ? root + s.slice(2) : s;
  });
  return items.length > 0 ? [`--allow-${kind}=${items.join(",")}`] : [];
}

/**
 * Every `--allow-<kind>` flag of a permission set, with `apiServers` (`--api-server` values)
 * added to `net`: what `deno compile` bakes in and what the image's entrypoint passes to
 * `deno run`.
 */
export function permissionFlags(
  permissions: PermissionSet,
  root: string,
  apiServers: readonly string[] = [],
): string[] {
  for (const kind of Object.keys(permissions)) {
    if (!PERMISSION_KINDS.includes(kind)) {
      throw new TypeError(
        `Unknown permission "${kind}" in deno.json: expected one of ${PERMISSION_KINDS.join(", ")}`,
      );
    }
  }
  const pinned = apiServers.map(apiServerHost);
  return PERMISSION_KINDS.flatMap((kind) =>
    permissionFlag(kind, permissions[kind], root, kind === "net" ? pinned : [])
  );
}

/** The full argument list for `deno compile`; pure, so it is unit-tested. */
export function compileArgs(o: CompileOptions): string[] {
  return [
    "compile",
    "--no-prompt",
    ...runtimeArgs(),
    ...permissionFlags(o.permissions, o.root, o.apiServers),
    ...(o.exclude ?? []).map((path) => `--exclude=${path}`),
    "--output",
    o.output,
    ...(o.target !== undefined ? ["--target", o.target] : []),
    `${o.root}main.ts`,
  ];
}

/** Existing folders of NPM_COMPILE_EXCLUDES in the npm cache, for every cached version. */
export function npmExcludePaths(npmCache: string): string[] {
  const out: string[] = [];
  for (const [pkg, folder] of NPM_COMPILE_EXCLUDES) {
    const dir = `${npmCache}/registry.npmjs.org/${pkg}`;
    let versions: Deno.DirEntry[];
    try {
      versions = [...Deno.readDirSync(dir)].filter((e) => e.isDirectory);
    } catch {
      continue;
    }
    for (const v of versions.map((e) => e.name).sort()) {
      try {
        if (Deno.statSync(`${dir}/${v}/${folder}`).isDirectory) out.push(`${dir}/${v}/${folder}`);
      } catch {
        // This version has no such folder.
      }
    }
  }
  return out;
}

/**
 * Why DENORT_BIN cannot work, or null. The deno CLI itself is the usual mistake: compiling
 * with it succeeds, but the result is plain `deno` and ignores the embedded program.
 */
export function denortBinProblem(path: string, denoPath: string): string | null {
  let real: string;
  try {
    real = Deno.realPathSync(path);
    if (!Deno.statSync(real).isFile) throw new Error("not a file");
  } catch {
    return `DENORT_BIN "${path}" is not a file: expected the path of a denort binary`;
  }
  if (real === Deno.realPathSync(denoPath)) {
    return `DENORT_BIN "${path}" is the deno CLI, not denort: the executable it builds ` +
      "ignores the embedded program; expected denort from denort-<target>.zip of the same release";
  }
  return null;
}

/** Where deno compile downloads denort from. */
export function denortUrl(version: string, target: string): string {
  return `https://dl.deno.land/release/v${version}/denort-${target}.zip`;
}

/** Where deno compile keeps a downloaded denort (DENO_DIR/dl), so it needs no network. */
export function denortCachePath(denoDir: string, version: string, target: string): string {
  return `${denoDir}/dl/release/v${version}/denort-${target}.zip`;
}

/** The error shown when denort is neither given, cached nor downloadable. */
export function denortUnavailableMessage(version: string, target: string, why: string): string {
  const zip = `denort-${target}.zip`;
  return [
    `Cannot compile: deno compile needs denort ${version} for ${target} and cannot download ` +
    `"${denortUrl(version, target)}" (${why})`,
    "Fetch it on a machine that can, then point DENORT_BIN at the unzipped binary:",
    `  curl -LO ${denortUrl(version, target)} && unzip ${zip}`,
    "  DENORT_BIN=$PWD/denort deno task compile",
    `(or put ${zip} itself at ${denortCachePath("$DENO_DIR", version, target)})`,
  ].join("\n");
}

async function denortReachable(url: string): Promise<string | null> {
  try {
    const res = await fetch(url, { method: "HEAD", signal: AbortSignal.timeout(10_000) });
    await res.body?.cancel();
    return res.ok ? null : `HTTP ${res.status}`;
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause : err;
    return cause instanceof Error ? cause.message : String(cause);
  }
}

/** DENO_DIR and the npm cache of this deno, from `deno info --json`. */
export async function denoInfo(): Promise<{ denoDir: string; npmCache: string }> {
  const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json"] }).output();
  const info = JSON.parse(new TextDecoder().decode(out.stdout));
  if (typeof info.denoDir !== "string" || typeof info.npmCache !== "string") {
    throw new Error(`Cannot find DENO_DIR: "deno info --json" printed no denoDir or npmCache`);
  }
  return info;
}

function existsFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      "api-server": { type: "string", multiple: true, default: [] },
      output: { type: "string", default: "dist/deno-kube-proxy" },
      target: { type: "string" },
    },
  });
  const root = new URL("..", import.meta.url).pathname;
  const config = JSON.parse(await Deno.readTextFile(`${root}deno.json`));
  const target = values.target ?? Deno.build.target;
  const info = await denoInfo();
  const args = compileArgs({
    permissions: config.permissions.proxy,
    root,
    apiServers: values["api-server"],
    output: values.output,
    exclude: npmExcludePaths(info.npmCache),
    ...(values.target !== undefined ? { target: values.target } : {}),
  });

  const denortBin = Deno.env.get("DENORT_BIN") ?? "";
  const version = Deno.version.deno;
  if (denortBin !== "") {
    const problem = denortBinProblem(denortBin, Deno.execPath());
    if (problem !== null) {
      console.error(problem);
      return 1;
    }
  } else if (!existsFile(denortCachePath(info.denoDir, version, target))) {
    const why = await denortReachable(denortUrl(version, target));
    if (why !== null) {
      console.error(denortUnavailableMessage(version, target, why));
      return 1;
    }
  }
  console.error(`deno ${args.join(" ")}`);
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: root,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (out.code !== 0) return out.code;
  if (target !== Deno.build.target) return 0;

  // A bad denort builds without complaint; make sure the result is really our program.
  const output = values.output.startsWith("/") ? values.output : `${root}${values.output}`;
  const check = await new Deno.Command(output, { args: ["--version"], stdin: "null" }).output();
  const said = new TextDecoder().decode(check.stdout).split("\n")[0]!.trim();
  if (check.code !== 0 || !said.startsWith("deno-kube-proxy ")) {
    await Deno.remove(output);
    console.error(
      `Built "${output}" does not run deno-kube-proxy ("--version" printed "${said}"), so it ` +
        "was removed: expected DENORT_BIN to be denort of the same Deno release",
    );
    return 1;
  }
  console.error(`Built ${output} (${said})`);
  return 0;
}

if (import.meta.main) Deno.exit(await main());
