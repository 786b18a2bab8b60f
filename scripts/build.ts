/**
 * Compiles deno-kube-proxy into one executable with the project's single permission set.
 *
 *   deno task compile [--api-server HOST[:PORT]] [--output dist/deno-kube-proxy]
 *
 * `--api-server` adds that host to the network permission, pinning the API server at build
 * time. Where `denort` cannot be downloaded, set DENORT_BIN to a local denort binary.
 */
import { parseArgs } from "node:util";

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
const perms = config.permissions.proxy as Record<string, unknown>;

/** Turns one permission-set entry into the matching --allow flag. */
function flag(name: string, value: unknown, extra: readonly string[] = []): string[] {
  if (value === true) return [`--allow-${name}`];
  if (!Array.isArray(value) && extra.length === 0) return [];
  const items = [...(Array.isArray(value) ? value : []), ...extra].map((v) =>
    name === "read" && String(v).startsWith("./") ? `${root}${String(v).slice(2)}` : String(v)
  );
  return items.length ? [`--allow-${name}=${items.join(",")}`] : [];
}

const args = [
  "compile",
  "--no-prompt",
  ...flag("read", perms.read),
  ...flag("write", perms.write),
  ...flag("run", perms.run),
  ...flag("net", perms.net, values["api-server"]),
  ...flag("env", perms.env),
  ...flag("sys", perms.sys),
  "--output",
  values.output,
  ...(values.target ? ["--target", values.target] : []),
  `${root}main.ts`,
];
console.error(`deno ${args.join(" ")}`);
const out = await new Deno.Command(Deno.execPath(), {
  args,
  cwd: root,
  stdout: "inherit",
  stderr: "inherit",
}).output();
if (out.code !== 0 && !Deno.env.get("DENORT_BIN")) {
  console.error(
    "Compile failed; if denort cannot be downloaded here, set DENORT_BIN to a denort binary",
  );
}
Deno.exit(out.code);
