import assert from "node:assert/strict";
import { loadKubeConfig, resolveCredentials } from "../../lib/k8s/mod.ts";
import { TOKEN_FILE_PERIOD_MS, TokenFileSource } from "../../lib/k8s/_token_file.ts";
import { FakeClock } from "../support/fake_clock.ts";

/** kubeadm's kube-proxy kubeconfig shape: the user names a (rotated) token file. */
function kubeconfig(user: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: default
  cluster: {server: "https://10.0.0.1:6443"}
users:
- name: default
  user: ${user}
contexts:
- name: default
  context: {cluster: default, user: default}
current-context: default
`;
}

/** Writes a kubeconfig whose user is `userYaml` (`$DIR` = its folder) and resolves the header. */
async function authorization(userYaml: string, token = "from-file"): Promise<string | undefined> {
  const dir = await Deno.makeTempDir({ prefix: "kw-tokenfile-" });
  try {
    await Deno.writeTextFile(`${dir}/token`, token);
    await Deno.writeTextFile(`${dir}/kubeconfig`, kubeconfig(userYaml.replace("$DIR", dir)));
    const loaded = loadKubeConfig({ kubeconfig: `${dir}/kubeconfig`, master: "" });
    return (await resolveCredentials(loaded.kubeConfig)).headers.Authorization;
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("loadKubeConfig() sends the token of a kubeconfig tokenFile (client-go's spelling)", async () => {
  assert.equal(await authorization("{tokenFile: token}"), "Bearer from-file");
});

Deno.test("loadKubeConfig() also accepts client-node's token-file spelling", async () => {
  assert.equal(await authorization("{token-file: $DIR/token}"), "Bearer from-file");
  // Relative to the kubeconfig (client-go), not to the working directory (client-node).
  assert.equal(await authorization("{token-file: token}"), "Bearer from-file");
});

Deno.test("loadKubeConfig() lets an inline token win over a token file, as client-go does", async () => {
  assert.equal(await authorization("{token: inline, tokenFile: token}"), "Bearer inline");
});

Deno.test("TokenFileSource reports a failed re-read, keeps the token and reads again next time", async () => {
  const clock = new FakeClock({ startMs: 0 });
  let file: string | null = "first";
  const errors: unknown[] = [];
  const source = new TokenFileSource("/token", {
    clock,
    readFile: () =>
      file === null ? Promise.reject(new Deno.errors.NotFound("gone")) : Promise.resolve(file),
    onReadError: (err) => errors.push(err),
  });
  assert.equal(await source.token(), "first");
  file = null;
  await clock.advance(TOKEN_FILE_PERIOD_MS);
  assert.equal(await source.token(), "first");
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof Deno.errors.NotFound);
  file = "second";
  assert.equal(await source.token(), "second", "the failed read is tried again at once");
  assert.equal(errors.length, 1);
});

Deno.test("loadKubeConfig()'s token file reports a failed re-read to the reporter", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kw-tokenfile-" });
  try {
    await Deno.writeTextFile(`${dir}/token`, "t1");
    await Deno.writeTextFile(`${dir}/kubeconfig`, kubeconfig("{tokenFile: token}"));
    const loaded = loadKubeConfig({ kubeconfig: `${dir}/kubeconfig`, master: "" });
    const reported: string[] = [];
    loaded.kubeConfig.reportTokenFileReadErrors((path) => reported.push(path));
    assert.equal((await resolveCredentials(loaded.kubeConfig)).headers.Authorization, "Bearer t1");
    await Deno.remove(`${dir}/token`);
    loaded.kubeConfig.invalidateCredentials();
    assert.equal((await resolveCredentials(loaded.kubeConfig)).headers.Authorization, "Bearer t1");
    assert.deepEqual(reported, [`${dir}/token`]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
