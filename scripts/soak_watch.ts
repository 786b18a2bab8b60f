/**
 * Soak check of the API watch loop (not a timed test): streams 10,000 watch events from the
 * in-process test API server through the real API source and prints memory before and after.
 *
 *   deno run -A --v8-flags=--expose-gc scripts/soak_watch.ts [--events 10000] [--services 200]
 */
import { parseArgs } from "node:util";
import { createApiSource, createKubeTransport, loadKubeConfig } from "../lib/k8s/mod.ts";
import { silentLogger } from "../lib/log/mod.ts";
import type { ObjectEvent, ObjectKind } from "../lib/source/mod.ts";
import {
  createTestPki,
  KUBE_FILES_ROOT,
  startTestApiServer,
  writeKubeconfig,
} from "../tests/support/api_server/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    events: { type: "string", default: "10000" },
    services: { type: "string", default: "200" },
  },
});
const total = Number(values.events);
const services = Number(values.services);

function memory(label: string): Deno.MemoryUsage {
  (globalThis as { gc?: () => void }).gc?.();
  const m = Deno.memoryUsage();
  const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MiB`;
  console.log(
    `${label.padEnd(7)} rss ${mb(m.rss)}  heapUsed ${mb(m.heapUsed)}  heapTotal ${
      mb(m.heapTotal)
    }  external ${mb(m.external)}`,
  );
  return m;
}

function svc(i: number, port: number) {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: `soak-${i}`, namespace: "soak" },
    spec: {
      clusterIP: `172.30.${Math.floor(i / 250)}.${(i % 250) + 1}`,
      ports: [{ name: "http", port, protocol: "TCP", targetPort: 8080 }],
    },
  };
}

const pki = await createTestPki();
// The server keeps its default history (1000 changes), so its own memory stays flat.
const server = await startTestApiServer({ pki });
const dir = `${KUBE_FILES_ROOT}/kw-soak-${Deno.pid}`;
const ac = new AbortController();
let running: Promise<void> | undefined;
try {
  for (let i = 0; i < services; i++) server.create(svc(i, 80));
  const kubeconfig = await writeKubeconfig({ dir, server: server.url, pki });
  const { kubeConfig } = loadKubeConfig({ kubeconfig, master: "" });
  let received = 0;
  const synced = new Set<ObjectKind>();
  const source = createApiSource({
    transport: createKubeTransport(kubeConfig),
    nodeName: "soak-node",
    logger: silentLogger,
    sink: {
      onEvent: (e: ObjectEvent) => {
        if (e.kind === "Service" && e.type === "MODIFIED") received++;
      },
      onSynced: (kind) => synced.add(kind),
    },
  });
  running = source.start(ac.signal);
  while (synced.size < 3 || server.openWatches("services") < 1) {
    await new Promise((r) => setTimeout(r, 20));
  }
  const before = memory("before");
  const started = performance.now();
  for (let n = 0; n < total; n++) {
    const i = n % services;
    const current = server.store.get("Service", "soak", `soak-${i}`);
    server.update({
      ...current,
      spec: { ...current.spec, ports: [{ ...current.spec.ports[0], port: 1000 + (n % 60000) }] },
    });
    if (n % 500 === 499) await new Promise((r) => setTimeout(r, 0)); // let the server write
  }
  while (received < total) await new Promise((r) => setTimeout(r, 20));
  const seconds = (performance.now() - started) / 1000;
  const after = memory("after");
  const stats = source.stats().Service;
  console.log(
    `${received} events in ${seconds.toFixed(2)} s (${(received / seconds).toFixed(0)}/s); ` +
      `watches ${stats.watches}, lists ${stats.lists}, malformed ${stats.malformedLines}; ` +
      `heapUsed grew ${((after.heapUsed - before.heapUsed) / 1024 / 1024).toFixed(1)} MiB`,
  );
} finally {
  ac.abort();
  await running;
  await server.close();
  await Deno.remove(dir, { recursive: true }).catch(() => {});
  await Deno.remove(pki.dir, { recursive: true }).catch(() => {});
}
