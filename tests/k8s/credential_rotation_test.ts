/**
 * Credentials that change while the proxy runs: a rotated token file (re-read after a minute,
 * and at once after a 401) and exec plugins (run again when their credential expires or the
 * server answers 401), through the real transport against the test API server.
 */
import assert from "node:assert/strict";
import { createKubeTransport, loadKubeConfig, resolveCredentials } from "../../lib/k8s/mod.ts";
import { KubeConfig } from "../../lib/k8s/_kube_config.ts";
import { TOKEN_FILE_PERIOD_MS, TokenFileSource } from "../../lib/k8s/_token_file.ts";
import {
  KUBE_FILES_ROOT,
  KUBE_PROXY_USER,
  startTestApiServer,
  type TestApiServer,
} from "../support/api_server/mod.ts";
import { FakeClock } from "../support/fake_clock.ts";
import { testPki } from "./api_support.ts";

/** Files in memory: what readFile returns, or a missing file. */
class MemoryFiles {
  readonly files = new Map<string, string>();
  reads = 0;
  readFile = (path: string): Promise<string> => {
    this.reads++;
    const text = this.files.get(path);
    return text === undefined
      ? Promise.reject(new Deno.errors.NotFound(`No such file "${path}"`))
      : Promise.resolve(text);
  };
}

Deno.test("TokenFileSource re-reads the file after a minute and at once after invalidate()", async () => {
  const clock = new FakeClock({ startMs: 1_000_000 });
  const fs = new MemoryFiles();
  fs.files.set("/sa/token", "first\n");
  const source = new TokenFileSource("/sa/token", { clock, readFile: fs.readFile });
  assert.equal(await source.token(), "first");
  fs.files.set("/sa/token", "second");
  await clock.advance(TOKEN_FILE_PERIOD_MS - 1);
  assert.equal(await source.token(), "first", "cached within the minute");
  await clock.advance(1);
  assert.equal(await source.token(), "second");
  fs.files.set("/sa/token", "third");
  source.invalidate();
  assert.equal(await source.token(), "third", "a 401 makes it read again at once");
  fs.files.delete("/sa/token");
  await clock.advance(TOKEN_FILE_PERIOD_MS);
  assert.equal(await source.token(), "third", "a failed re-read keeps the last token");
  const missing = new TokenFileSource("/nope", { clock, readFile: fs.readFile });
  await assert.rejects(() => missing.token(), Deno.errors.NotFound);
});

Deno.test("KubeConfig serves a tokenFile user's rotated token on its clock", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kw-rotate-" });
  try {
    await Deno.writeTextFile(`${dir}/token`, "one");
    const clock = new FakeClock({ startMs: 5_000 });
    const kc = KubeConfig.parse(
      `clusters: [{name: c, cluster: {server: "https://10.0.0.1:6443"}}]
users: [{name: u, user: {auth-provider: {name: tokenFile, config: {tokenFile: token}}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`.replace("tokenFile: token", `tokenFile: ${dir}/token`),
      dir,
      { clock },
    );
    assert.equal((await resolveCredentials(kc)).headers.Authorization, "Bearer one");
    await Deno.writeTextFile(`${dir}/token`, "two");
    assert.equal((await resolveCredentials(kc)).headers.Authorization, "Bearer one");
    await clock.advance(TOKEN_FILE_PERIOD_MS);
    assert.equal((await resolveCredentials(kc)).headers.Authorization, "Bearer two");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Runs `body` with a test API server whose token table the test may change. */
async function withServer(
  tokens: Record<string, string>,
  body: (server: TestApiServer, dir: string) => Promise<void>,
): Promise<void> {
  const pki = await testPki();
  const server = await startTestApiServer({ pki, auth: { tokens } });
  const dir = `${KUBE_FILES_ROOT}/kw-rotate-${Deno.pid}-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(`${dir}/ca.crt`, pki.caCert);
  try {
    await body(server, dir);
  } finally {
    await server.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function kubeconfig(server: string, dir: string, user: string): string {
  return `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "${server}", certificate-authority: ${dir}/ca.crt}}]
users: [{name: u, user: ${user}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`;
}

/** GETs the nodes through the real transport; returns the status. */
async function listNodes(transport: ReturnType<typeof createKubeTransport>): Promise<number> {
  const response = await transport.request({ method: "GET", path: "/api/v1/nodes" });
  await response.close();
  return response.status;
}

Deno.test("a rotated token file is picked up after a 401 without waiting a minute", async () => {
  const tokens: Record<string, string> = { "token-a": KUBE_PROXY_USER };
  await withServer(tokens, async (server, dir) => {
    await Deno.writeTextFile(`${dir}/token`, "token-a\n");
    await Deno.writeTextFile(
      `${dir}/kubeconfig`,
      kubeconfig(server.url, dir, "{tokenFile: token}"),
    );
    const { kubeConfig } = loadKubeConfig({ kubeconfig: `${dir}/kubeconfig`, master: "" });
    const transport = createKubeTransport(kubeConfig);
    assert.equal(await listNodes(transport), 200);
    // The kubelet rotates the token; the server stops accepting the old one.
    await Deno.writeTextFile(`${dir}/token`, "token-b\n");
    delete tokens["token-a"];
    tokens["token-b"] = KUBE_PROXY_USER;
    assert.equal(await listNodes(transport), 401, "the cached token is refused once");
    assert.equal(await listNodes(transport), 200, "then the file is read again");
  });
});

Deno.test("an exec plugin runs again when its credential expires or the server says 401", async () => {
  const tokens: Record<string, string> = { "exec-1": KUBE_PROXY_USER };
  await withServer(tokens, async (server, dir) => {
    // Prints "exec-N" on its Nth run; the expiry comes from the file "expiry" if present.
    const plugin = `${dir}/plugin`;
    await Deno.writeTextFile(
      plugin,
      `#!/bin/sh
n=$(( $(cat ${dir}/runs 2>/dev/null || echo 0) + 1 )); echo $n > ${dir}/runs
exp=$(cat ${dir}/expiry 2>/dev/null)
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-'$n'"'\${exp:+',"expirationTimestamp":"'$exp'"'}'}}'
`,
    );
    await Deno.chmod(plugin, 0o755);
    const user = `{exec: {apiVersion: client.authentication.k8s.io/v1, command: ${plugin}}}`;
    await Deno.writeTextFile(`${dir}/kubeconfig`, kubeconfig(server.url, dir, user));
    const { kubeConfig } = loadKubeConfig({ kubeconfig: `${dir}/kubeconfig`, master: "" });
    const transport = createKubeTransport(kubeConfig);
    const runs = async () => Number(await Deno.readTextFile(`${dir}/runs`));
    assert.equal(await listNodes(transport), 200);
    assert.equal(await listNodes(transport), 200);
    assert.equal(await runs(), 1, "a credential without expiry is cached");
    delete tokens["exec-1"];
    tokens["exec-2"] = KUBE_PROXY_USER;
    assert.equal(await listNodes(transport), 401);
    assert.equal(await listNodes(transport), 200, "a 401 makes the plugin run again");
    assert.equal(await runs(), 2);
    // An expired credential is never reused.
    await Deno.writeTextFile(`${dir}/expiry`, "2000-01-01T00:00:00Z");
    kubeConfig.invalidateCredentials();
    tokens["exec-3"] = KUBE_PROXY_USER;
    tokens["exec-4"] = KUBE_PROXY_USER;
    assert.equal(await listNodes(transport), 200);
    assert.equal(await listNodes(transport), 200);
    assert.equal(await runs(), 4);
  });
});
