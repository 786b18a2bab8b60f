/**
 * The house rules of CONVENTIONS.md that the module graph can check: each folder's `mod.ts` is
 * an explicit list (no `export *`), files marked private (`_name.ts`) are imported only from
 * their own folder, the lib/* folders import each other without a cycle, and a mode is one
 * room: its folder's `mod.ts` exports the mode object alone, the rest of lib reaches the folder
 * only through it, and no mode imports another. The graph is main.ts's, lazy imports included,
 * as `deno info --json` reports it.
 */
import assert from "node:assert/strict";
import { PROXY_MODE_NAMES } from "../lib/backends/modes.ts";

/** One module of `deno info --json`, with the dependencies the checks need. */
interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; type?: { specifier: string } }[];
}

const LIB = new URL("../lib/", import.meta.url).href;

let graph: Promise<Map<string, string[]>> | undefined;

/** Every lib module main.ts loads, by path under lib/, and the lib modules it imports. */
function libImports(): Promise<Map<string, string[]>> {
  return graph ??= (async () => {
    const main = new URL("../main.ts", import.meta.url).pathname;
    const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json", main] })
      .output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const info = JSON.parse(new TextDecoder().decode(out.stdout)) as { modules: InfoModule[] };
    const imports = new Map<string, string[]>();
    for (const m of info.modules) {
      if (!m.specifier.startsWith(LIB)) continue;
      const deps = (m.dependencies ?? []).flatMap((d) => [d.code?.specifier, d.type?.specifier])
        .filter((s): s is string => s !== undefined && s.startsWith(LIB))
        .map((s) => s.slice(LIB.length));
      imports.set(m.specifier.slice(LIB.length), [...new Set(deps)]);
    }
    return imports;
  })();
}

function folderOf(path: string): string {
  return path.includes("/") ? path.slice(0, path.lastIndexOf("/")) : "";
}

function isPrivate(path: string): boolean {
  return path.slice(path.lastIndexOf("/") + 1).startsWith("_");
}

Deno.test("the module graph covers every lib folder", async () => {
  const folders = new Set([...(await libImports()).keys()].map((p) => p.split("/")[0]));
  for (const f of ["app", "backends", "config", "proxy", "trace", "metrics", "net"]) {
    assert.ok(folders.has(f), `lib/${f} is missing from main.ts's module graph`);
  }
});

Deno.test("no lib module imports a file private to another folder", async () => {
  const bad: string[] = [];
  for (const [from, deps] of await libImports()) {
    for (const to of deps) {
      if (isPrivate(to) && folderOf(to) !== folderOf(from)) bad.push(`lib/${from} -> lib/${to}`);
    }
  }
  assert.deepEqual(bad, []);
});

/** The lib/* folders each lib/* folder imports (lib/backends/ipvs counts as lib/backends). */
function folderEdges(imports: Map<string, string[]>): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const [from, deps] of imports) {
    const a = from.split("/")[0]!;
    for (const to of deps) {
      const b = to.split("/")[0]!;
      if (a === b) continue;
      if (!edges.has(a)) edges.set(a, new Set());
      edges.get(a)!.add(b);
    }
  }
  return edges;
}

/** One cycle of the graph as `a -> b -> a`, or null when there is none. */
function findCycle(edges: Map<string, Set<string>>): string | null {
  const done = new Set<string>();
  const path: string[] = [];
  const visit = (node: string): string | null => {
    const at = path.indexOf(node);
    if (at >= 0) return [...path.slice(at), node].join(" -> ");
    if (done.has(node)) return null;
    path.push(node);
    for (const next of edges.get(node) ?? []) {
      const cycle = visit(next);
      if (cycle !== null) return cycle;
    }
    path.pop();
    done.add(node);
    return null;
  };
  for (const node of [...edges.keys()].sort()) {
    const cycle = visit(node);
    if (cycle !== null) return cycle;
  }
  return null;
}

Deno.test("findCycle() names a cycle and passes a graph without one", () => {
  const g = (pairs: [string, string][]) => {
    const edges = new Map<string, Set<string>>();
    for (const [a, b] of pairs) edges.set(a, (edges.get(a) ?? new Set()).add(b));
    return edges;
  };
  assert.equal(findCycle(g([["a", "b"], ["b", "c"], ["a", "c"]])), null);
  assert.equal(findCycle(g([["a", "b"], ["b", "c"], ["c", "a"]])), "a -> b -> c -> a");
});

Deno.test("the lib/* folders import each other without a cycle", async () => {
  assert.equal(findCycle(folderEdges(await libImports())), null);
});

/** Every mod.ts under `dir`, as paths under lib/. */
async function modFiles(dir: URL, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (entry.isDirectory) {
      out.push(...await modFiles(new URL(`${entry.name}/`, dir), `${prefix}${entry.name}/`));
    } else if (entry.name === "mod.ts") {
      out.push(`${prefix}mod.ts`);
    }
  }
  return out.sort();
}

Deno.test("every lib mod.ts lists what it exports (no export *)", async () => {
  const lib = new URL("../lib/", import.meta.url);
  const bad: string[] = [];
  for (const path of await modFiles(lib)) {
    const text = await Deno.readTextFile(new URL(path, lib));
    if (/^\s*export\s+\*/m.test(text)) bad.push(`lib/${path}`);
  }
  assert.deepEqual(bad, []);
});

/** The mode folders, lib/backends/<mode>/, one per name the registry lists. */
function modeFolders(): string[] {
  return PROXY_MODE_NAMES.map((name) => `backends/${name}`);
}

/** The mode folder `path` (under lib/) lies in, or null. */
function modeFolderOf(path: string, modes: readonly string[]): string | null {
  return modes.find((m) => path.startsWith(`${m}/`)) ?? null;
}

Deno.test("each mode's mod.ts exports its mode object and nothing else", async () => {
  const lib = new URL("../lib/", import.meta.url);
  const bad: string[] = [];
  for (const folder of modeFolders()) {
    const url = new URL(`${folder}/mod.ts`, lib);
    const values = Object.keys(await import(url.href));
    if (values.length !== 1) bad.push(`lib/${folder}/mod.ts: ${values.join(", ")}`);
    const text = await Deno.readTextFile(url);
    const types = text.match(/^export\s+(type|interface)\b.*$|\btype\s+\w+\s*[,}]/gm) ?? [];
    if (types.length > 0) bad.push(`lib/${folder}/mod.ts types: ${types.join(" ")}`);
  }
  assert.deepEqual(bad, []);
});

Deno.test("lib reaches a mode from outside its folder only through its mod.ts", async () => {
  const modes = modeFolders();
  const bad: string[] = [];
  for (const [from, deps] of await libImports()) {
    for (const to of deps) {
      const mode = modeFolderOf(to, modes);
      if (mode === null || modeFolderOf(from, modes) === mode) continue;
      if (to !== `${mode}/mod.ts`) bad.push(`lib/${from} -> lib/${to}`);
    }
  }
  assert.deepEqual(bad, []);
});

Deno.test("no mode folder imports another mode's folder", async () => {
  const modes = modeFolders();
  const bad: string[] = [];
  for (const [from, deps] of await libImports()) {
    const own = modeFolderOf(from, modes);
    if (own === null) continue;
    for (const to of deps) {
      const other = modeFolderOf(to, modes);
      if (other !== null && other !== own) bad.push(`lib/${from} -> lib/${to}`);
    }
  }
  assert.deepEqual(bad, []);
});

Deno.test("a mode folder reaches lib/backends' interfaces without its mod.ts (which loads the modes)", async () => {
  const modes = modeFolders();
  const bad: string[] = [];
  for (const [from, deps] of await libImports()) {
    if (modeFolderOf(from, modes) === null) continue;
    for (const to of deps) if (to === "backends/mod.ts") bad.push(`lib/${from} -> lib/${to}`);
  }
  assert.deepEqual(bad, []);
});
