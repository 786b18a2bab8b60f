/**
 * Report (not a test): client-node 2.0.1's informer (makeInformer) against our reflector
 * (lib/k8s/reflector.ts), each alone against a fresh in-process test API server, under each
 * fault the watch loop must survive. After the fault one Service changes; the table says whether
 * each client delivered that change within the bound, how long it took, which other events it
 * emitted (spurious), the errors it surfaced, and the Service requests it made after the fault.
 *
 *   deno run -A scripts/compare_informer.ts [--bound-ms 10000] [--only cut,stall]
 *
 * Ours runs with a 1 s idle timeout (the tests' setting; the deployed default is 150 s) and the
 * server sends bookmarks every 300 ms; the informer asks for no bookmarks and has its fixed 30 s
 * client-side inactivity timeout. Always exits 0 after printing.
 */
import { parseArgs } from "node:util";
import {
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  makeInformer,
  type V1Service,
} from "@kubernetes/client-node";
import {
  createKubeTransport,
  createReflector,
  type KubeObject,
  loadKubeConfig,
  proxyResources,
  type ReflectorStats,
} from "../lib/k8s/mod.ts";
import { silentLogger } from "../lib/log/mod.ts";
import {
  createTestPki,
  KUBE_FILES_ROOT,
  type RequestRecord,
  startTestApiServer,
  type TestApiServer,
  type TestPki,
  writeKubeconfig,
} from "../tests/support/api_server/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    "bound-ms": { type: "string", default: "10000" },
    only: { type: "string", default: "" },
  },
});
const BOUND_MS = Number(values["bound-ms"]);
/** Quiet time after delivery in which trailing (spurious) events are still collected. */
const SETTLE_MS = 1000;
/** Hard limit on setup (server, client sync, fault) of one run. */
const SETUP_LIMIT_MS = 20_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** One fault: what is done to the server before the Service changes. */
interface Fault {
  readonly name: string;
  /** Applied before the client starts (its first list meets it); the change follows at once. */
  readonly atStart?: boolean;
  apply(server: TestApiServer): Promise<void>;
}

const FAULTS: readonly Fault[] = [
  { name: "none", apply: () => Promise.resolve() },
  { name: "cut", apply: (s) => Promise.resolve(void s.cutStreams()) },
  { name: "stall", apply: (s) => Promise.resolve(void s.stallStreams()) },
  {
    name: "410 (expire+cut)",
    apply: (s) => {
      s.expireHistory();
      s.cutStreams();
      return Promise.resolve();
    },
  },
  {
    name: "500x3 (+cut)",
    apply: (s) => {
      s.failNext(3, 500, { match: { resource: "services" } });
      s.cutStreams();
      return Promise.resolve();
    },
  },
  {
    name: "429 RA=2 (+cut)",
    apply: (s) => {
      s.failNext(1, 429, { retryAfterSeconds: 2, match: { resource: "services" } });
      s.cutStreams();
      return Promise.resolve();
    },
  },
  {
    name: "500x3 at start",
    atStart: true,
    apply: (s) => Promise.resolve(s.failNext(3, 500, { match: { resource: "services" } })),
  },
  {
    name: "429 RA=2 at start",
    atStart: true,
    apply: (s) =>
      Promise.resolve(
        s.failNext(1, 429, { retryAfterSeconds: 2, match: { resource: "services" } }),
      ),
  },
  { name: "malformed line", apply: (s) => Promise.resolve(void s.sendMalformedLine()) },
  { name: "restart newHistory", apply: (s) => s.restart({ newHistory: true }) },
  {
    name: "stop 2s, start",
    apply: async (s) => {
      await s.stop();
      await sleep(2000);
      await s.start();
    },
  },
];

/** What one client did in one run. */
interface Outcome {
  delivered: boolean;
  ms: number | undefined;
  spurious: string[];
  errors: string[];
  requests: string;
  note: string;
}

/** A client under test: started against a kubeconfig, reporting events as "TYPE ns/name port". */
interface Client {
  readonly name: string;
  start(kubeconfig: string, onEvent: (e: string) => void, onError: (e: string) => void): Promise<
    { synced: () => boolean; stop: () => Promise<void>; stats: () => string }
  >;
}

function describe(type: string, o: KubeObject | KubernetesObject): string {
  const m = o.metadata ?? {};
  // deno-lint-ignore no-explicit-any
  const port = (o as any).spec?.ports?.[0]?.port;
  return `${type} ${m.namespace}/${m.name} ${port}`;
}

function errorText(err: unknown): string {
  if (err === undefined || err === null) return "undefined";
  // deno-lint-ignore no-explicit-any
  const e = err as any;
  const code = e.statusCode ?? e.code ?? e.name ?? "";
  const first = String(e.message ?? err).split("\n")[0]!;
  return `${code} ${first}`.trim().slice(0, 60);
}

const INFORMER: Client = {
  name: "informer",
  async start(kubeconfig, onEvent, onError) {
    const kc = new KubeConfig();
    kc.loadFromFile(kubeconfig);
    const api = kc.makeApiClient(CoreV1Api);
    const labelSelector = proxyResources("ic")[0]!.labelSelector ?? "";
    const informer = makeInformer<V1Service>(
      kc,
      "/api/v1/services",
      () => api.listServiceForAllNamespaces({ labelSelector }),
      labelSelector,
    );
    let synced = false;
    informer.on("add", (o) => onEvent(describe("ADDED", o)));
    informer.on("update", (o) => onEvent(describe("MODIFIED", o)));
    informer.on("delete", (o) => onEvent(describe("DELETED", o)));
    informer.on("error", (e) => onError(errorText(e)));
    informer.on("connect", () => {});
    await informer.start();
    synced = true;
    return {
      synced: () => synced,
      stop: () => informer.stop(),
      stats: () => `cache ${informer.list().length} objects`,
    };
  },
};

const REFLECTOR: Client = {
  name: "reflector",
  start(kubeconfig, onEvent) {
    const { kubeConfig } = loadKubeConfig({ kubeconfig, master: "" });
    let synced = false;
    const reflector = createReflector({
      resource: proxyResources("ic")[0]!,
      transport: createKubeTransport(kubeConfig),
      onChange: (type, o) => onEvent(describe(type, o)),
      onSynced: () => synced = true,
      logger: silentLogger,
      idleTimeoutMs: 1000,
    });
    const ac = new AbortController();
    const running = reflector.start(ac.signal);
    const s = (x: Readonly<ReflectorStats>) =>
      `lists ${x.lists} idle ${x.idleTimeouts} 410 ${x.expired} err ${x.errors} bad ${x.malformedLines}`;
    return Promise.resolve({
      synced: () => synced,
      stop: async () => {
        ac.abort();
        await Promise.race([running, sleep(5000)]);
      },
      stats: () => s(reflector.stats()),
    });
  },
};

function svc(name: string, ip: string, port: number): unknown {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "ns" },
    spec: { clusterIP: ip, ports: [{ name: "http", port, protocol: "TCP", targetPort: 8080 }] },
  };
}

/** "w200 w500x3 l200": the Service requests after `since`, repeats folded. */
function requestSummary(records: readonly RequestRecord[], since: number): string {
  const codes = records.filter((r) => r.time >= since).map((r) => `${r.verb[0]}${r.status}`);
  const out: string[] = [];
  for (let i = 0; i < codes.length;) {
    let j = i;
    while (j < codes.length && codes[j] === codes[i]) j++;
    out.push(j - i > 1 ? `${codes[i]}x${j - i}` : codes[i]!);
    i = j;
  }
  return out.join(" ") || "-";
}

async function waitUntil(check: () => boolean, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) return false;
    await sleep(20);
  }
  return true;
}

function withLimit<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} took over ${ms} ms`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

let runCounter = 0;

async function runOne(pki: TestPki, fault: Fault, client: Client): Promise<Outcome> {
  const server = await startTestApiServer({ pki, bookmarkIntervalMs: 300 });
  const dir = `${KUBE_FILES_ROOT}/ic-${Deno.pid}-${runCounter++}`;
  const events: string[] = [];
  const errors: string[] = [];
  let handle: Awaited<ReturnType<Client["start"]>> | undefined;
  let faultAt = Date.now();
  try {
    server.create(svc("web", "172.30.0.10", 80));
    server.create(svc("api", "172.30.0.11", 80));
    const kubeconfig = await writeKubeconfig({ dir, server: server.url, pki });
    if (fault.atStart) await fault.apply(server);
    handle = await withLimit(
      client.start(kubeconfig, (e) => events.push(e), (e) => errors.push(e)),
      SETUP_LIMIT_MS,
      "Start",
    );
    const h = handle;
    let mark = 0;
    if (!fault.atStart) {
      const ready = () => h.synced() && server.openWatches("services") >= 1;
      if (!await waitUntil(ready, SETUP_LIMIT_MS)) throw new Error("No sync and open watch");
      await sleep(300);
      mark = events.length;
      faultAt = Date.now();
      await withLimit(fault.apply(server), SETUP_LIMIT_MS, "Fault");
    }
    const web = server.store.get("Service", "ns", "web")!;
    server.update({ ...web, spec: { ...web.spec, ports: [{ ...web.spec.ports[0], port: 81 }] } });
    const changedAt = Date.now();
    // After a failed first list the change arrives in the list that finally works.
    const expected = fault.atStart ? "ADDED ns/web 81" : "MODIFIED ns/web 81";
    let deliveredAt: number | undefined;
    await waitUntil(() => {
      if (deliveredAt === undefined && events.slice(mark).includes(expected)) {
        deliveredAt = Date.now();
      }
      return deliveredAt !== undefined;
    }, BOUND_MS);
    if (deliveredAt !== undefined) await sleep(SETTLE_MS);
    const after = events.slice(mark);
    const hit = after.indexOf(expected);
    const spurious = after.filter((e, i) =>
      i !== hit && !(fault.atStart && e === "ADDED ns/api 80")
    );
    return {
      delivered: deliveredAt !== undefined,
      ms: deliveredAt === undefined ? undefined : deliveredAt - changedAt,
      spurious,
      errors,
      requests: requestSummary(server.requests({ resource: "services" }), faultAt),
      note: h.stats(),
    };
  } catch (err) {
    return {
      delivered: false,
      ms: undefined,
      spurious: events,
      errors,
      requests: requestSummary(server.requests({ resource: "services" }), faultAt),
      note: `run failed: ${errorText(err)}`,
    };
  } finally {
    await handle?.stop().catch(() => {});
    await server.close().catch(() => {});
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  const line = (r: string[]) => `| ${r.map((x, c) => x.padEnd(widths[c]!)).join(" | ")} |`;
  return [line(rows[0]!), `|${widths.map((w) => "-".repeat(w + 2)).join("|")}|`]
    .concat(rows.slice(1).map(line)).join("\n");
}

// A stray rejection from either client must not kill the report.
globalThis.addEventListener("unhandledrejection", (e) => {
  e.preventDefault();
  console.error(`(unhandled rejection: ${errorText(e.reason)})`);
});

const only = values.only === "" ? [] : values.only.split(",");
const faults = FAULTS.filter((f) => only.length === 0 || only.some((o) => f.name.startsWith(o)));
const pkiDir = `${KUBE_FILES_ROOT}/ic-pki-${Deno.pid}`;
const rows = [[
  "fault",
  "client",
  "delivered",
  "ms",
  "spurious events",
  "error callbacks",
  "Service requests after fault",
  "state",
]];
try {
  const pki = await createTestPki({ dir: pkiDir });
  for (const fault of faults) {
    for (const client of [INFORMER, REFLECTOR]) {
      const o = await runOne(pki, fault, client);
      const row = [
        fault.name,
        client.name,
        o.delivered ? "yes" : "no",
        o.ms === undefined ? "-" : String(o.ms),
        o.spurious.length === 0 ? "0" : `${o.spurious.length}: ${o.spurious.join(", ")}`,
        client === REFLECTOR
          ? "n/a"
          : o.errors.length === 0
          ? "0"
          : `${o.errors.length}: ${o.errors.join("; ")}`,
        o.requests,
        o.note,
      ];
      console.error(row.join("  ·  "));
      rows.push(row);
    }
  }
} catch (err) {
  console.error(`Comparison stopped early: ${errorText(err)}`);
} finally {
  await Deno.remove(pkiDir, { recursive: true }).catch(() => {});
}
console.log(
  `\nBound ${BOUND_MS} ms per change; client-node 2.0.1 makeInformer vs lib/k8s createReflector ` +
    `(idle timeout 1 s), Deno ${Deno.version.deno}\n`,
);
console.log(table(rows));
Deno.exit(0);
