/**
 * The program as a process: exit codes, one-shot commands, signals. Runs main.ts under the
 * project's permission set, like operators do.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { REPO_ROOT } from "../../scripts/netns/mod.ts";
import { list, node1, service } from "./support/cluster_objects.ts";
import { MANIFEST_ROOT, runMain } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";

Deno.test("e2e: bad flags and values exit 1 naming the flag", async () => {
  const unknown = await runMain(["--no-such-flag"]);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /--no-such-flag/);
  const bad = await runMain(["--iptables-sync-period=abc"]);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /--iptables-sync-period.*"abc"/);
});

Deno.test("e2e: --version and --help exit 0", async () => {
  const v = await runMain(["--version"]);
  assert.equal(v.code, 0);
  assert.match(v.stdout, /deno-kube-proxy v1\.34/);
  const h = await runMain(["--help"]);
  assert.equal(h.code, 0);
  assert.match(h.stdout, /--iptables-min-sync-period/);
});

Deno.test("e2e: --write-config-to writes a KubeProxyConfiguration that --config reads back", async () => {
  await Deno.mkdir(MANIFEST_ROOT, { recursive: true });
  const path = await Deno.makeTempFile({ dir: MANIFEST_ROOT, suffix: ".yaml" });
  try {
    const w = await new Deno.Command(Deno.execPath(), {
      // Writing a file outside the proxy's permission set needs the caller's grant.
      args: [
        "run",
        "-A",
        "--quiet",
        `${REPO_ROOT}main.ts`,
        `--write-config-to=${path}`,
        "--iptables-sync-period=45s",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(w.code, 0, new TextDecoder().decode(w.stderr));
    const doc = parse(await Deno.readTextFile(path));
    assert.equal(doc.kind, "KubeProxyConfiguration");
    assert.equal(doc.apiVersion, "kubeproxy.config.k8s.io/v1alpha1");
    assert.equal(doc.iptables.syncPeriod, "45s");
    const r = await runMain([`--config=${path}`, "--version"]);
    assert.equal(r.code, 0);
    const render = await runMain([
      `--config=${path}`,
      "render",
      `--manifests=${REPO_ROOT}deploy/examples`,
      "--hostname-override=node1",
    ]);
    assert.equal(render.code, 0, render.stderr);
    assert.match(render.stdout, /KUBE-SERVICES/);
  } finally {
    await Deno.remove(path);
  }
});

Deno.test("e2e: SIGTERM stops the proxy with exit 0 and leaves its rules in place", async () => {
  const state = list([
    node1(),
    service("demo", "web", "172.30.0.10", [{ name: "http", port: 80, targetPort: 8080 }]),
  ]);
  const scenario = { prefix: "kpsig", ipv6: false, pods: [], state, echo: false } as const;
  await withProxy(scenario, async ({ topo, proxy }) => {
    const started = Date.now();
    const status = await proxy.kill(5000);
    assert.equal(status.code, 0, proxy.output());
    assert.ok(Date.now() - started < 2000, "must exit within 2 s");
    const filter = await topo.exec("node", "iptables-legacy-save", ["-t", "filter"]);
    assert.match(filter.stdout, /172\.30\.0\.10/, "rules stay after SIGTERM");
  });
});
