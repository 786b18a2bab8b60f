/**
 * The real program (`deno run -P=proxy main.ts --kubeconfig ...`) in the node namespace, watching
 * the test API server through a bridge at 127.0.0.1:6443: rules follow objects created, updated
 * and deleted over the API; faults leave the rules intact and converge; wrong credentials give a
 * clear log line and a non-ready /healthz. In nftables mode, ServiceCIDRs from the API drop
 * traffic to unallocated ClusterIPs, and a server answering 404 for them does not hold up the
 * first sync. Needs root and socat; fails loudly without them.
 * IP plan: node 192.168.0.2 (node1), pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import {
  createTopology,
  type ProbeAnswer,
  type SpawnedProcess,
  type SpawnProxyOptions,
  type Topology,
} from "../../scripts/netns/mod.ts";
import {
  createTestPki,
  exposeInNamespace,
  KUBE_FILES_ROOT,
  startTestApiServer,
  type TestApiServer,
  type TestPki,
  writeKubeconfig,
} from "../support/api_server/mod.ts";
import { endpointSlice, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { httpGet } from "./support/env_proxy.ts";
import { eventually, requireRealKernel, startProxy } from "./support/proxy_process.ts";
import { clusterIPsCheck } from "./support/nft_node.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];
const POD_A = "10.0.1.2", POD_B = "10.0.2.2", CLIENT = "10.0.3.2";
/** Rules must follow the API server within this long (min sync period is 1 s). */
const CONVERGE_MS = 10_000;

let pki: Promise<TestPki> | undefined;

/** What a scenario body works with. */
interface ApiWatchContext {
  readonly topo: Topology;
  readonly server: TestApiServer;
  readonly proxy: SpawnedProcess;
}

interface ApiWatchScenario {
  readonly prefix: string;
  readonly objects: readonly unknown[];
  readonly auth?: { readonly token: string };
  /** Extra flags (after startProxy's defaults and --kubeconfig). */
  readonly args?: readonly string[];
  /** When the proxy counts as started; default its first applied sync. */
  readonly started?: Pick<SpawnProxyOptions, "ready" | "timeoutMs">;
  /** Runs before the proxy starts (e.g. to queue faults for its first lists). */
  readonly beforeStart?: (server: TestApiServer) => void;
}

/** Topology + test API server + bridge + kubeconfig (+ the proxy), all removed afterwards. */
async function withApiWatch(
  scenario: ApiWatchScenario,
  body: (ctx: ApiWatchContext) => Promise<void>,
): Promise<void> {
  await requireRealKernel();
  if (!pki) {
    const dir = `${KUBE_FILES_ROOT}/kw-e2e-pki-${Deno.pid}`;
    pki = createTestPki({ dir });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch {
        // already gone
      }
    });
  }
  const server = await startTestApiServer({ pki: await pki, bookmarkIntervalMs: 1000 });
  const dir = `${KUBE_FILES_ROOT}/${scenario.prefix}`;
  const topo = await createTopology({
    prefix: scenario.prefix,
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }, {
      name: "client",
      ip: CLIENT,
    }],
  });
  let bridge: Awaited<ReturnType<typeof exposeInNamespace>> | undefined;
  try {
    for (const o of scenario.objects) server.create(o);
    scenario.beforeStart?.(server);
    bridge = await exposeInNamespace({
      namespace: topo.nsName("node"),
      serverPort: server.port,
      dir,
    });
    const kubeconfig = await writeKubeconfig({
      dir,
      server: bridge.url,
      pki: await pki,
      ...(scenario.auth ? { auth: scenario.auth } : {}),
    });
    await topo.startEchoServers({});
    const proxy = await startProxy(
      topo,
      [`--kubeconfig=${kubeconfig}`, ...(scenario.args ?? [])],
      scenario.started,
    );
    await body({ topo, server, proxy });
  } catch (err) {
    console.error(topo.logs());
    throw err;
  } finally {
    await topo.destroy();
    await bridge?.close();
    await server.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

/** The node's nat table as iptables-legacy-save prints it, counters dropped. */
async function natRules(topo: Topology): Promise<string> {
  const out = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
  assert.equal(out.code, 0, out.stderr);
  return out.stdout.split("\n").filter((l) => l.startsWith("-A ") || l.startsWith(":KUBE"))
    .map((l) => l.replace(/ \[\d+:\d+\]$/, "")).join("\n");
}

/** True when KUBE-SERVICES sends `ip`:80 somewhere. */
function hasServiceRule(rules: string, ip: string): boolean {
  return rules.split("\n").some((l) =>
    l.startsWith("-A KUBE-SERVICES ") && l.includes(`-d ${ip}/32`) && l.includes("--dport 80")
  );
}

function answeredBy(answers: ProbeAnswer[]): string[] {
  return [...new Set(answers.map((a) => a.ok ? a.name : `error:${a.error}`))].sort();
}

/** A copy of the stored object with `change` applied to it. */
function modified(server: TestApiServer, kind: string, ns: string, name: string, change: object) {
  return { ...server.store.get(kind, ns, name), ...change };
}

const BASE = [
  node1(),
  service("demo", "web", "172.30.0.10", WEB),
  endpointSlice("demo", "web", [POD_A], WEB),
];

Deno.test("e2e: API watch - rules appear, change and disappear with API objects", async () => {
  await withApiWatch({ prefix: "kwapi1", objects: BASE }, async ({ topo, server }) => {
    const first = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.10:80",
      count: 10,
    });
    assert.deepEqual(answeredBy(first), ["pod-a"]);

    server.create(service("demo", "api", "172.30.0.11", WEB));
    server.create(endpointSlice("demo", "api", [POD_B], WEB));
    await eventually(
      "the new service's rule",
      CONVERGE_MS,
      async () => hasServiceRule(await natRules(topo), "172.30.0.11"),
    );

    server.update(modified(server, "EndpointSlice", "demo", "web-slice", {
      endpoints: [{ addresses: [POD_B], conditions: { ready: true }, nodeName: "node1" }],
    }));
    await eventually("web moved to pod-b", CONVERGE_MS, async () => {
      const answers = await topo.probe({
        from: "client",
        proto: "tcp",
        to: "172.30.0.10:80",
        count: 10,
      });
      return answeredBy(answers).join() === "pod-b";
    });

    server.delete("Service", "demo", "api");
    await eventually(
      "the deleted service's rule gone",
      CONVERGE_MS,
      async () => !hasServiceRule(await natRules(topo), "172.30.0.11"),
    );
    assert.ok(hasServiceRule(await natRules(topo), "172.30.0.10"));
    assert.equal(server.events().filter((e) => e.reason === "Starting").length, 1);
  });
});

Deno.test("e2e: API watch - a cut stream, a 410 and a server restart keep the rules and converge", async () => {
  await withApiWatch({ prefix: "kwapi2", objects: BASE }, async ({ topo, server, proxy }) => {
    const before = await natRules(topo);
    assert.ok(hasServiceRule(before, "172.30.0.10"));

    // A cut stream with the history gone: the program relists; nothing changed, rules stay.
    const lists = server.count({ verb: "list", resource: "services" });
    server.expireHistory();
    server.cutStreams();
    await server.waitForRequests({ verb: "list", resource: "services" }, lists + 1, CONVERGE_MS);
    await server.waitForWatches("services", 1, CONVERGE_MS);
    assert.equal(await natRules(topo), before);

    // The server goes away; the rules stay while it is down; a change made meanwhile (with a
    // new resourceVersion history) is applied once it is back.
    await server.stop();
    server.create(service("demo", "late", "172.30.0.12", WEB));
    server.create(endpointSlice("demo", "late", [POD_A], WEB));
    await new Promise((r) => setTimeout(r, 1500));
    assert.equal(await natRules(topo), before);
    await server.restart({ newHistory: true });
    const took = await eventually(
      "the change made while down",
      CONVERGE_MS,
      async () => hasServiceRule(await natRules(topo), "172.30.0.12"),
    );
    assert.ok(took < CONVERGE_MS);
    const answers = await topo.probe({
      from: "client",
      proto: "tcp",
      to: "172.30.0.12:80",
      count: 5,
    });
    assert.deepEqual(answeredBy(answers), ["pod-a"]);
    assert.ok(hasServiceRule(await natRules(topo), "172.30.0.10"));
    assert.match(proxy.output(), /Resource version expired; listing again/);
  });
});

Deno.test("e2e: API watch - wrong credentials give a clear error and a non-ready /healthz", async () => {
  const scenario = {
    prefix: "kwapi3",
    objects: BASE,
    auth: { token: "wrong" },
    args: ["--iptables-sync-period=2s"],
    started: { ready: /Cannot list Services; retrying.*401 Unauthorized/, timeoutMs: 15_000 },
  };
  await withApiWatch(scenario, async ({ topo, server, proxy }) => {
    // Healthy during startup is allowed for 2 x syncPeriod; after that /healthz must say 503.
    await eventually(
      "/healthz 503",
      4 * 2000 + 5000,
      async () => (await httpGet(topo, "http://127.0.0.1:10256/healthz")).status === 503,
    );
    await server.waitForRequests({ verb: "list", resource: "services", status: 401 }, 3, 15_000);
    assert.ok(!proxy.output().includes("SyncProxyRules complete"));
    const exited = await Promise.race([proxy.status.then(() => true), Promise.resolve(false)]);
    assert.equal(exited, false, "the program must keep retrying, not exit");
  });
});

const SERVICE_CIDR = {
  apiVersion: "networking.k8s.io/v1",
  kind: "ServiceCIDR",
  metadata: { name: "kubernetes" },
  spec: { cidrs: ["172.30.0.0/16"] },
};

Deno.test("e2e: API watch [nftables] - a ServiceCIDR drops unallocated ClusterIPs until it is deleted", async () => {
  const scenario = {
    prefix: "scapi1",
    objects: [...BASE, SERVICE_CIDR],
    args: ["--proxy-mode=nftables"],
  };
  await withApiWatch(scenario, async ({ topo, server }) => {
    await eventually(
      "the drop rule",
      CONVERGE_MS,
      async () => (await clusterIPsCheck(topo)).includes("Drop traffic to unallocated ClusterIPs"),
    );
    const probe = (to: string) =>
      topo.probe({ from: "client", proto: "tcp", to, count: 2, timeoutMs: 700 });
    assert.deepEqual(answeredBy(await probe("172.30.9.9:80")), ["error:timeout"]);
    assert.deepEqual(answeredBy(await probe("172.30.0.10:80")), ["pod-a"]);
    server.delete("ServiceCIDR", undefined, "kubernetes");
    await eventually(
      "the drop rule gone",
      CONVERGE_MS,
      async () => !(await clusterIPsCheck(topo)).includes("unallocated"),
    );
  });
});

Deno.test("e2e: API watch [nftables] - a server without ServiceCIDRs (404) does not hold up the first sync", async () => {
  const scenario = {
    prefix: "scapi2",
    objects: [...BASE, SERVICE_CIDR],
    args: ["--proxy-mode=nftables"],
    beforeStart: (server: TestApiServer) =>
      server.failNext(1, 404, { match: { verb: "list", resource: "servicecidrs" } }),
  };
  await withApiWatch(scenario, async ({ topo, server, proxy }) => {
    await proxy.waitForOutput("does not serve ServiceCIDRs", CONVERGE_MS);
    const answers = await topo.probe({ from: "client", proto: "tcp", to: "172.30.0.10:80" });
    assert.deepEqual(answeredBy(answers), ["pod-a"]);
    assert.doesNotMatch(await clusterIPsCheck(topo), /unallocated/);
    assert.equal(server.count({ resource: "servicecidrs" }), 1);
  });
});
