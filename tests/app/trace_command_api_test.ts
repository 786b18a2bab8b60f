/**
 * traceCommand with the cluster state from the test API server (one list, as the proxy lists),
 * over the iptables rendering of that state: it agrees, and it writes nothing to the API (no
 * "Starting kube-proxy" Event).
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { traceCommand } from "../../lib/app/trace_command.ts";
import { defaultConfig } from "../../lib/config/mod.ts";
import { createFakeIptables } from "../support/fake_iptables.ts";
import { createMemoryLogger } from "../../lib/log/mod.ts";
import { endpointSlice, node1, service } from "../e2e/support/cluster_objects.ts";
import { KUBE_FILES_ROOT, writeKubeconfig } from "../support/api_server/mod.ts";
import { pki, withServer } from "../support/api_server/test_fixtures.ts";

const WEB = [{ name: "http", port: 80, targetPort: 8080 }];

Deno.test("traceCommand() lists the state from the API server and posts nothing", async () => {
  await withServer(async (api) => {
    api.create(node1());
    api.create(service("demo", "web", "172.30.0.10", WEB));
    api.create(endpointSlice("demo", "web", ["10.0.1.2", "10.0.2.2"], WEB));
    const dir = `${KUBE_FILES_ROOT}/tc-trace-${Deno.pid}`;
    try {
      const kubeconfig = await writeKubeconfig({ dir, server: api.url, pki });
      const config = {
        ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
        hostnameOverride: "node1",
      };
      config.clientConnection = { ...config.clientConnection, kubeconfig };
      const out = await traceCommand(config, {
        family: "IPv4",
        from: "10.0.3.2",
        to: "172.30.0.10",
        port: 80,
        protocol: "tcp",
        source: "pod",
        output: "text",
        rendered: true,
      }, { runner: createFakeIptables().run, logger: createMemoryLogger() });
      assert.equal(out.code, 0, out.text);
      assert.match(out.text, /decision: forward demo\/web:http to 2 endpoint\(s\)/);
      assert.match(out.text, /10\.0\.1\.2:8080 +50\.0%/);
      assert.equal(api.count({ verb: "create" }), 0);
      assert.ok(api.count({ verb: "list", resource: "services" }) >= 1);
    } finally {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  });
});
