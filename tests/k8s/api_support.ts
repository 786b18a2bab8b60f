/**
 * Runs the API source against the in-process test API server for integration tests: a recording
 * sink that mirrors the objects it was told about (the source's output, kept as state), and
 * small polling helpers. Kubeconfig files go under /tmp/deno-kube-proxy/kw-*.
 */
import {
  createApiSource,
  createKubeTransport,
  loadKubeConfig,
  type ReflectorStats,
} from "../../lib/k8s/mod.ts";
import { createMemoryLogger } from "../../lib/log/mod.ts";
import type { ObjectEvent, ObjectKind, ObjectSink } from "../../lib/source/mod.ts";
import {
  createTestPki,
  KUBE_FILES_ROOT,
  startTestApiServer,
  type TestApiServer,
  type TestApiServerOptions,
  type TestPki,
  writeKubeconfig,
} from "../support/api_server/mod.ts";

let sharedPki: Promise<TestPki> | undefined;

/** One PKI per test process (openssl takes a moment), removed when the process ends. */
export function testPki(): Promise<TestPki> {
  if (!sharedPki) {
    const dir = `${KUBE_FILES_ROOT}/kw-pki-${Deno.pid}`;
    sharedPki = createTestPki({ dir });
    globalThis.addEventListener("unload", () => {
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch {
        // already gone
      }
    });
  }
  return sharedPki;
}

/** A sink that keeps what the source delivered: every event, and the resulting objects. */
export class RecordingSink implements ObjectSink {
  readonly events: ObjectEvent[] = [];
  readonly synced = new Set<ObjectKind>();
  /** kind → "namespace/name" → object, as the events built it. */
  readonly objects = new Map<ObjectKind, Map<string, unknown>>();

  onEvent(event: ObjectEvent): void {
    this.events.push(event);
    const meta = event.object.metadata ?? {};
    const key = meta.namespace ? `${meta.namespace}/${meta.name}` : `${meta.name}`;
    const bucket = this.objects.get(event.kind) ?? new Map<string, unknown>();
    this.objects.set(event.kind, bucket);
    if (event.type === "DELETED") bucket.delete(key);
    else bucket.set(key, event.object);
  }

  onSynced(kind: ObjectKind): void {
    this.synced.add(kind);
  }

  /** Whole lists applied per kind (the initial one and each relist). */
  readonly listed = new Map<ObjectKind, number>();

  onListed(kind: ObjectKind): void {
    this.listed.set(kind, (this.listed.get(kind) ?? 0) + 1);
  }

  /** Sorted keys of the objects of `kind` the sink holds. */
  keys(kind: ObjectKind): string[] {
    return [...(this.objects.get(kind)?.keys() ?? [])].sort();
  }

  /** Events after index `from`, as "TYPE kind key" strings. */
  since(from: number): string[] {
    return this.events.slice(from).map((e) => {
      const m = e.object.metadata ?? {};
      return `${e.type} ${e.kind} ${m.namespace ? `${m.namespace}/` : ""}${m.name}`;
    });
  }
}

/** Polls a condition until true (shared with the other tests). */
export { waitFor } from "../support/wait.ts";

/** Real time passes (for "nothing happens" checks). */
export function pause(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** What a scenario body gets. */
export interface ApiScenario {
  readonly server: TestApiServer;
  readonly sink: RecordingSink;
  readonly logs: string[];
  stats(): Record<ObjectKind, ReflectorStats>;
}

/** Options of withApiSource. */
export interface ApiScenarioOptions {
  readonly server?: Omit<TestApiServerOptions, "pki">;
  /** "token" (default, the kube-proxy token), a token string, or "certificate". */
  readonly auth?: { readonly token: string } | "certificate";
  readonly idleTimeoutMs?: number;
  readonly pageSize?: number;
  readonly minWatchTimeoutSeconds?: number;
  /** Objects created before the source starts. */
  readonly objects?: readonly unknown[];
  /** Runs before the source starts (e.g. to queue faults for the first lists). */
  readonly beforeStart?: (server: TestApiServer) => void;
  /** The source's protobufLists (default: its own default). */
  readonly protobufLists?: boolean;
}

/** A Service in namespace "ns" with one TCP port. */
export function service(name: string, ip: string, labels: Record<string, string> = {}): unknown {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { name, namespace: "ns", labels },
    spec: { clusterIP: ip, ports: [{ name: "http", port: 80, protocol: "TCP", targetPort: 8080 }] },
  };
}

/** A Node with an InternalIP. */
export function node(name: string, ip: string, labels: Record<string, string> = {}): unknown {
  return {
    apiVersion: "v1",
    kind: "Node",
    metadata: { name, labels },
    status: { addresses: [{ type: "InternalIP", address: ip }] },
  };
}

let counter = 0;

/**
 * Starts a test API server holding `objects`, the API source (node "node-1", short backoff with
 * no jitter) against it through a kubeconfig, runs `body`, then stops everything and checks the
 * source's start() promise settled (no dangling loop).
 */
export async function withApiSource(
  options: ApiScenarioOptions,
  body: (s: ApiScenario) => Promise<void>,
): Promise<void> {
  const pki = await testPki();
  const server = await startTestApiServer({ ...options.server, pki });
  const dir = `${KUBE_FILES_ROOT}/kw-${Deno.pid}-${counter++}`;
  const logger = createMemoryLogger();
  const ac = new AbortController();
  let running: Promise<void> | undefined;
  try {
    for (const o of options.objects ?? []) server.create(o);
    options.beforeStart?.(server);
    const kubeconfig = await writeKubeconfig({
      dir,
      server: server.url,
      pki,
      ...(options.auth ? { auth: options.auth } : {}),
    });
    const { kubeConfig } = loadKubeConfig({ kubeconfig, master: "" });
    const sink = new RecordingSink();
    const source = createApiSource({
      transport: createKubeTransport(kubeConfig),
      nodeName: "node-1",
      sink,
      logger,
      backoff: { initialMs: 100, maxMs: 1000, random: () => 0 },
      idleTimeoutMs: options.idleTimeoutMs ?? 30_000,
      pageSize: options.pageSize ?? 500,
      minWatchTimeoutSeconds: options.minWatchTimeoutSeconds ?? 300,
      ...(options.protobufLists !== undefined ? { protobufLists: options.protobufLists } : {}),
    });
    running = source.start(ac.signal);
    await body({ server, sink, logs: logger.lines, stats: () => source.stats() });
  } catch (err) {
    console.error(logger.lines.join("\n"));
    throw err;
  } finally {
    ac.abort();
    await running;
    await server.close();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
