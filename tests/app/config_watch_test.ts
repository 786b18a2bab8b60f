import assert from "node:assert/strict";
import { watchConfigFile } from "../../lib/app/config_watch.ts";
import { createMemoryLogger, silentLogger } from "../../lib/log/mod.ts";

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

/** A folder watch that fails on its first use and, made again, reports one event on demand. */
function failingThenWorkingWatch() {
  let made = 0;
  let fire: (() => void) | undefined;
  const watch = () => {
    made++;
    const first = made === 1;
    let closed = false;
    return {
      close() {
        closed = true;
        fire?.();
      },
      async *[Symbol.asyncIterator]() {
        if (first) throw new Error("inotify watch limit reached");
        while (!closed) {
          await new Promise<void>((r) => fire = r);
          if (!closed) yield { kind: "modify" };
        }
      },
    };
  };
  return { watch, made: () => made, event: () => fire?.() };
}

Deno.test("watchConfigFile() logs and reports a failed watch, watches again and still sees a change", async () => {
  let content = CONFIG;
  const w = failingThenWorkingWatch();
  const errors: unknown[] = [];
  const logger = createMemoryLogger();
  const abort = new AbortController();
  const result = watchConfigFile({
    path: "/etc/deno-kube-proxy/config.yaml",
    signal: abort.signal,
    logger,
    readTextFile: () => Promise.resolve(content),
    watch: w.watch,
    graceMs: 1,
    retryMs: 10,
    onError: (err) => errors.push(err),
  });
  try {
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(errors.length, 1);
    assert.match(logger.lines.join("\n"), /Watching the config file failed; watching it again/);
    assert.equal(w.made(), 2);
    content = CONFIG + "mode: nftables\n";
    w.event();
    assert.match((await result) ?? "", /changed on disk/);
  } finally {
    abort.abort();
    await result;
  }
});
