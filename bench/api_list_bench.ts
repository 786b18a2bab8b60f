/**
 * `deno task bench`: the initial list of 20,000 objects (10,000 Services + 10,000 EndpointSlices
 * of 10 endpoints) from the project's test API server over TLS, as the program does it (the
 * reflectors behind the client's 5 QPS / 10 burst limiter, each object validated as lib/proxy
 * does before it reaches a rule), against the floor of the raw fetch + JSON.parse of the same
 * two resourceVersion=0 bodies. A "server pages" case shows the fallback when the server
 * insists on 500-object pages.
 */
import type { V1EndpointSlice, V1Service } from "@kubernetes/client-node";
import {
  createKubeTransport,
  createReflector,
  createTokenBucket,
  loadKubeConfig,
  proxyResources,
  resolveCredentials,
} from "../lib/k8s/mod.ts";
import { validateEndpointSlice, validateService } from "../lib/proxy/mod.ts";
import {
  KUBE_FILES_ROOT,
  startTestApiServer,
  type TestApiServer,
  writeKubeconfig,
} from "../tests/support/api_server/mod.ts";
import { testPki } from "../tests/k8s/api_support.ts";
import { fillBenchCluster } from "./api_objects.ts";

const SERVICES = 10_000;
const DIR = `${KUBE_FILES_ROOT}/kpf-bench-list-${Deno.pid}`;

interface Lab {
  readonly server: TestApiServer;
  readonly kubeconfig: string;
}

function lab(pageWatchCacheLists: boolean): () => Promise<Lab> {
  let made: Promise<Lab> | undefined;
  return () =>
    made ??= (async () => {
      const pki = await testPki();
      const server = await startTestApiServer({ pki, pageWatchCacheLists });
      fillBenchCluster(server, SERVICES);
      const kubeconfig = await writeKubeconfig({
        dir: `${DIR}-${pageWatchCacheLists}`,
        server: server.url,
        pki,
      });
      globalThis.addEventListener("unload", () => {
        server.close();
        Deno.removeSync(`${DIR}-${pageWatchCacheLists}`, { recursive: true });
      });
      return { server, kubeconfig };
    })();
}

/** Lists Services and EndpointSlices like the program; resolves when both lists are in. */
async function programList(l: Lab): Promise<number> {
  const { kubeConfig } = loadKubeConfig({ kubeconfig: l.kubeconfig, master: "" });
  const transport = createKubeTransport(kubeConfig, {
    limiter: createTokenBucket({ qps: 5, burst: 10 }),
  });
  const ac = new AbortController();
  let valid = 0;
  const [svc, slice] = proxyResources("node1");
  const loops: Promise<void>[] = [];
  const synced = [svc!, slice!].map((resource) =>
    new Promise<void>((resolve) => {
      const reflector = createReflector({
        resource,
        transport,
        onChange: (_type, object) => {
          const v = resource.kind === "Service"
            ? validateService(object as V1Service)
            : validateEndpointSlice(object as V1EndpointSlice);
          if (v.ok) valid++;
        },
        onSynced: resolve,
      });
      loops.push(reflector.start(ac.signal));
    })
  );
  await Promise.all(synced);
  ac.abort(); // the watches that followed the lists
  await Promise.all(loops);
  if (valid !== 2 * SERVICES) {
    throw new Error(`Expected ${2 * SERVICES} valid objects, got ${valid}`);
  }
  return valid;
}

/** The floor: two raw GETs with resourceVersion=0 and JSON.parse, nothing else. */
async function rawList(l: Lab): Promise<number> {
  const { kubeConfig, server } = loadKubeConfig({ kubeconfig: l.kubeconfig, master: "" });
  const creds = await resolveCredentials(kubeConfig);
  const client = Deno.createHttpClient(creds.client);
  let n = 0;
  try {
    for (const path of ["/api/v1/services", "/apis/discovery.k8s.io/v1/endpointslices"]) {
      const r = await fetch(`${server}${path}?resourceVersion=0`, {
        client,
        headers: creds.headers,
      });
      n += (JSON.parse(await r.text()) as { items: unknown[] }).items.length;
    }
  } finally {
    client.close();
  }
  return n;
}

const watchCache = lab(false);
const paging = lab(true);
const group = "list 20,000 objects";
Deno.bench({
  name: "raw fetch + JSON.parse (floor)",
  group,
  baseline: true,
  n: 5,
  warmup: 1,
  async fn() {
    await rawList(await watchCache());
  },
});
Deno.bench({
  name: "reflectors + validation, resourceVersion=0",
  group,
  n: 5,
  warmup: 1,
  async fn() {
    await programList(await watchCache());
  },
});
Deno.bench({
  name: "reflectors + validation, server pages by 500",
  group,
  n: 3,
  warmup: 1,
  async fn() {
    await programList(await paging());
  },
});
