import assert from "node:assert/strict";
import { loadKubeConfig, serverHost } from "../../lib/k8s/mod.ts";
import { parseMasterUrl, SERVICE_ACCOUNT_DIR } from "../../lib/k8s/client_config.ts";

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters:
- name: c1
  cluster: {server: "https://10.0.0.1:6443/", certificate-authority: ca.crt}
- name: other
  cluster: {server: "https://10.9.9.9:6443"}
users:
- name: u1
  user: {token: abc}
contexts:
- name: ctx
  context: {cluster: c1, user: u1}
current-context: ctx
`;

async function withTempDir(body: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "kw-kubeconfig-" });
  try {
    await body(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("loadKubeConfig() reads --kubeconfig, resolving relative files next to it", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/kubeconfig`, KUBECONFIG);
    const loaded = loadKubeConfig({ kubeconfig: `${dir}/kubeconfig`, master: "" });
    assert.equal(loaded.origin, "kubeconfig");
    assert.equal(loaded.server, "https://10.0.0.1:6443");
    assert.equal(loaded.kubeConfig.getCurrentCluster()?.caFile, `${dir}/ca.crt`);
    assert.equal(loaded.kubeConfig.getCurrentUser()?.token, "abc");
  });
});

Deno.test("loadKubeConfig() lets --master replace only the current cluster's server", async () => {
  await withTempDir(async (dir) => {
    await Deno.writeTextFile(`${dir}/kubeconfig`, KUBECONFIG);
    const loaded = loadKubeConfig({
      kubeconfig: `${dir}/kubeconfig`,
      master: "https://127.0.0.1:7443/",
    });
    assert.equal(loaded.server, "https://127.0.0.1:7443");
    assert.equal(loaded.kubeConfig.getCurrentUser()?.token, "abc");
    assert.equal(loaded.kubeConfig.getCurrentCluster()?.caFile, `${dir}/ca.crt`);
    assert.equal(loaded.kubeConfig.getCluster("other")?.server, "https://10.9.9.9:6443");
  });
});

Deno.test("loadKubeConfig() with --master alone talks to that URL without credentials", () => {
  const loaded = loadKubeConfig({ kubeconfig: "", master: "http://127.0.0.1:8080" });
  assert.equal(loaded.origin, "master");
  assert.equal(loaded.server, "http://127.0.0.1:8080");
  assert.equal(loaded.kubeConfig.getCurrentUser()?.token, undefined);
});

Deno.test("loadKubeConfig() falls back to the in-cluster service account", async () => {
  await withTempDir(async (prefix) => {
    const dir = `${prefix}${SERVICE_ACCOUNT_DIR}`;
    await Deno.mkdir(dir, { recursive: true });
    await Deno.writeTextFile(`${dir}/token`, "sa-token");
    await Deno.writeTextFile(`${dir}/ca.crt`, "not used here");
    await Deno.writeTextFile(`${dir}/namespace`, "kube-system");
    const env = (name: string) =>
      ({ KUBERNETES_SERVICE_HOST: "fd00::1", KUBERNETES_SERVICE_PORT: "443" })[name];
    const loaded = loadKubeConfig({
      kubeconfig: "",
      master: "",
      serviceAccountPrefix: prefix,
      env,
    });
    assert.equal(loaded.origin, "in-cluster");
    assert.equal(loaded.server, "https://[fd00::1]:443");
    assert.equal(loaded.kubeConfig.getCurrentCluster()?.caFile, `${dir}/ca.crt`);
    // The token is read (and re-read) from the file by client-node's tokenFile provider.
    const headers: Record<string, string> = {};
    await loaded.kubeConfig.applyToHTTPSOptions({ headers });
    assert.equal(headers.Authorization, "Bearer sa-token");
  });
});

Deno.test("loadKubeConfig() explains what is missing", async () => {
  assert.throws(
    () => loadKubeConfig({ kubeconfig: "", master: "", env: () => undefined }),
    /No API server configured: pass --kubeconfig FILE or --master URL/,
  );
  await withTempDir(async (prefix) => {
    const env = (name: string) =>
      ({ KUBERNETES_SERVICE_HOST: "10.96.0.1", KUBERNETES_SERVICE_PORT: "443" })[name];
    assert.throws(
      () => loadKubeConfig({ kubeconfig: "", master: "", serviceAccountPrefix: prefix, env }),
      /service-account token ".*\/token" does not exist/,
    );
    assert.throws(
      () => loadKubeConfig({ kubeconfig: `${prefix}/missing`, master: "" }),
      /^Error: Cannot load --kubeconfig ".*\/missing"/,
    );
    await Deno.writeTextFile(
      `${prefix}/bad`,
      KUBECONFIG.replace("current-context: ctx", "current-context: nope"),
    );
    assert.throws(
      () => loadKubeConfig({ kubeconfig: `${prefix}/bad`, master: "" }),
      /current-context "nope" is not defined/,
    );
  });
  assert.throws(
    () => parseMasterUrl("10.0.0.1:6443"),
    /Invalid --master "10.0.0.1:6443": expected/,
  );
  assert.throws(() => parseMasterUrl("ftp://x"), /expected an http or https URL/);
});

Deno.test("serverHost() gives the host:port a --allow-net entry needs", () => {
  assert.equal(serverHost("https://10.0.0.1:6443"), "10.0.0.1:6443");
  assert.equal(serverHost("https://[fd00::1]:443"), "[fd00::1]");
});
