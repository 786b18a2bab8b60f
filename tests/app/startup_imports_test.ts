import assert from "node:assert/strict";

/** One module of `deno info --json`, with the dependencies the walk needs. */
interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string }; isDynamic?: boolean }[];
}

/** `deno info --json` of main.ts. */
interface ModuleGraph {
  roots: string[];
  modules: InfoModule[];
  redirects: Record<string, string>;
}

let graph: Promise<ModuleGraph> | undefined;

/** main.ts's module graph, asked of `deno info` once for every test here. */
function mainGraph(): Promise<ModuleGraph> {
  return graph ??= (async () => {
    const main = new URL("../../main.ts", import.meta.url).pathname;
    const out = await new Deno.Command(Deno.execPath(), { args: ["info", "--json", main] })
      .output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    return JSON.parse(new TextDecoder().decode(out.stdout)) as ModuleGraph;
  })();
}

/** The non-file modules main.ts loads: at start-up only, or with every lazy import too. */
async function programImports(withDynamic: boolean): Promise<string[]> {
  const info = await mainGraph();
  const modules = new Map(info.modules.map((m) => [m.specifier, m]));
  const seen = new Set<string>();
  const pending = [...info.roots];
  while (pending.length > 0) {
    const specifier = pending.pop()!;
    const resolved = info.redirects[specifier] ?? specifier;
    if (seen.has(resolved)) continue;
    seen.add(resolved);
    for (const dep of modules.get(resolved)?.dependencies ?? []) {
      if (dep.code && (withDynamic || !dep.isDynamic)) pending.push(dep.code.specifier);
    }
  }
  return [...seen].filter((s) => !s.startsWith("file:")).sort();
}

const AT_START_UP = [
  "node:path",
  "node:process",
  "npm:/prom-client@15.1.3/lib/counter.js",
  "npm:/prom-client@15.1.3/lib/gauge.js",
  "npm:/prom-client@15.1.3/lib/histogram.js",
  "npm:/prom-client@15.1.3/lib/registry.js",
  "npm:/yaml@2.9.1",
];

Deno.test("the program loads no node:fs and no client-node module at start-up", async () => {
  // node:fs (and the Node streams it brings) costs ~2.5 MB resident for good; client-node's
  // config_types.js imports it, exec_auth.js brings node:child_process.
  assert.deepEqual(await programImports(false), AT_START_UP);
});

Deno.test("client-node is loaded only behind the lazy imports of exec plugins and auth providers", async () => {
  assert.deepEqual(
    await programImports(true),
    [
      ...AT_START_UP,
      "npm:/@kubernetes/client-node@2.0.1",
      "npm:/@kubernetes/client-node@2.0.1/dist/exec_auth.js",
    ].sort(),
  );
});
