import assert from "node:assert/strict";
import { watchConfigFile } from "../../lib/app/config_watch.ts";
import { silentLogger } from "../../lib/log/mod.ts";

const CONFIG = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

/** A temp folder holding config.yaml, and a running watch on it. */
async function setup() {
  const dir = await Deno.makeTempDir({ prefix: "hm_config_watch_" });
  const path = `${dir}/config.yaml`;
  await Deno.writeTextFile(path, CONFIG);
  const abort = new AbortController();
  const result = watchConfigFile({
    path,
    signal: abort.signal,
    logger: silentLogger,
    graceMs: 100,
  });
  // Let the watch start before the test touches the file.
  await new Promise((r) => setTimeout(r, 100));
  const settle = async (ms: number) => {
    const timer = setTimeout(() => abort.abort(), ms);
    try {
      return await result;
    } finally {
      clearTimeout(timer);
    }
  };
  const cleanup = async () => {
    abort.abort();
    await result;
    await Deno.remove(dir, { recursive: true });
  };
  return { dir, path, settle, cleanup };
}

Deno.test("watchConfigFile() reports a write in place", async () => {
  const t = await setup();
  try {
    await Deno.writeTextFile(t.path, CONFIG + "mode: iptables\n");
    const msg = await t.settle(5000);
    assert.match(msg ?? "", /^Config file ".*config\.yaml" changed on disk/);
  } finally {
    await t.cleanup();
  }
});

Deno.test("watchConfigFile() reports a file replaced by rename with new content", async () => {
  const t = await setup();
  try {
    await Deno.writeTextFile(`${t.dir}/.config.yaml.tmp`, CONFIG + "oomScoreAdj: -500\n");
    await Deno.rename(`${t.dir}/.config.yaml.tmp`, t.path);
    assert.match(await t.settle(5000) ?? "", /changed on disk/);
  } finally {
    await t.cleanup();
  }
});

Deno.test("watchConfigFile() reports a removed file", async () => {
  const t = await setup();
  try {
    await Deno.remove(t.path);
    assert.match(await t.settle(5000) ?? "", /^Config file ".*" was removed/);
  } finally {
    await t.cleanup();
  }
});

Deno.test("watchConfigFile() ignores a rewrite with the same content and other files", async () => {
  const t = await setup();
  try {
    await Deno.writeTextFile(`${t.dir}/.config.yaml.tmp`, CONFIG);
    await Deno.rename(`${t.dir}/.config.yaml.tmp`, t.path);
    await Deno.writeTextFile(t.path, CONFIG);
    await Deno.writeTextFile(`${t.dir}/unrelated.txt`, "x");
    assert.equal(await t.settle(800), null, "same content must not restart the proxy");
  } finally {
    await t.cleanup();
  }
});

Deno.test("watchConfigFile() resolves null when stopped", async () => {
  const t = await setup();
  assert.equal(await t.settle(0), null);
  await t.cleanup();
});
