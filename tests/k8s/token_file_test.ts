import assert from "node:assert/strict";
import { loadKubeConfig, resolveCredentials } from "../../lib/k8s/mod.ts";

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
