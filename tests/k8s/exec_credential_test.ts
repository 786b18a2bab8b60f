import assert from "node:assert/strict";
import { loadKubeConfig, resolveCredentials } from "../../lib/k8s/mod.ts";

/** A kubeconfig whose user gets its token from an exec credential plugin (as EKS/GKE do). */
function kubeconfig(plugin: string): string {
  return `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443"}
users:
- name: u
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ${plugin}
      args: ["--cluster", "c"]
      interactiveMode: Never
contexts:
- name: ctx
  context: {cluster: c, user: u}
current-context: ctx
`;
}

Deno.test("resolveCredentials() takes the bearer token an exec credential plugin prints", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kw-exec-" });
  try {
    const plugin = `${dir}/credential-plugin`;
    // The plugin echoes its argument into the token, proving args reach it.
    await Deno.writeTextFile(
      plugin,
      `#!/bin/sh
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec'"$2"'"}}'
`,
    );
    await Deno.chmod(plugin, 0o755);
    await Deno.writeTextFile(`${dir}/kubeconfig`, kubeconfig(plugin));
    const loaded = loadKubeConfig({ kubeconfig: `${dir}/kubeconfig`, master: "" });
    const creds = await resolveCredentials(loaded.kubeConfig);
    assert.equal(creds.headers.Authorization, "Bearer execc");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
