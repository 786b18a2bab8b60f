import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { CommandFailure } from "../../lib/app/command_failure.ts";
import { createStateSource } from "../../lib/app/state_source.ts";
import { defaultConfig, type ProxyConfig } from "../../lib/config/mod.ts";
import { createMemoryLogger } from "../../lib/log/mod.ts";
import type { ObjectSink } from "../../lib/source/mod.ts";

const sink: ObjectSink = { onEvent: () => {}, onSynced: () => {} };

/** Runs `body` with the default config plus a kubeconfig (token auth) that points at `server`. */
async function withKubeconfig(
  server: string,
  body: (config: ProxyConfig) => Promise<void> | void,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "kw-state-source-" });
  try {
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      JSON.stringify({
        apiVersion: "v1",
        kind: "Config",
        clusters: [{ name: "c", cluster: { server } }],
        users: [{ name: "u", user: { token: "t" } }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      }),
    );
    const base = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
    await body({
      ...base,
      clientConnection: { ...base.clientConnection, kubeconfig: `${dir}/kubeconfig` },
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("createStateSource() reads manifests when --manifests is given", () => {
  const config = {
    ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
    manifests: "/nonexistent/cluster.yaml",
  };
  const source = createStateSource(config, createMemoryLogger())(sink);
  assert.equal(typeof (source as { stopped?: unknown }).stopped, "function");
});

Deno.test("createStateSource() watches the API server of --kubeconfig otherwise", async () => {
  await withKubeconfig("https://127.0.0.1:6443", (config) => {
    const logger = createMemoryLogger();
    const source = createStateSource(config, logger)(sink);
    assert.equal(typeof (source as { stats?: unknown }).stats, "function");
    assert.ok(logger.lines.some((l) => l.includes("Using the API server")));
    // The default content type is protobuf: the two big lists ask for it.
    assert.ok(
      logger.lines.some((l) =>
        l.includes("API encodings") && l.includes("Services and EndpointSlices in protobuf")
      ),
    );
  });
});

Deno.test("createStateSource() without any source fails with exit code 1 and says what to pass", () => {
  assert.throws(
    () =>
      createStateSource(
        defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
        createMemoryLogger(),
        { env: () => undefined },
      ),
    (e: unknown) =>
      e instanceof CommandFailure && e.code === 1 &&
      /pass --kubeconfig FILE or --master URL.*--manifests PATH/.test(e.message),
  );
});

Deno.test("createStateSource() refuses an API server the permission set cannot reach", async () => {
  await withKubeconfig("https://10.96.0.1:443", (config) => {
    const asked: string[] = [];
    assert.throws(
      () =>
        createStateSource(config, createMemoryLogger(), {
          netPermission: (host) => (asked.push(host), false),
        }),
      (e: unknown) =>
        e instanceof CommandFailure && e.code === 1 &&
        e.message.includes('No network permission for the API server "10.96.0.1"') &&
        e.message.includes("--api-server 10.96.0.1"),
    );
    assert.deepEqual(asked, ["10.96.0.1"]);
  });
});
