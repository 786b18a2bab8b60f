/**
 * The watch loop as a timeline on a FakeClock, against a small in-memory API (a state-keeping
 * double: objects, a resourceVersion, queued failures, open watches) instead of a socket.
 */
import assert from "node:assert/strict";
import { type KubeObject } from "../../lib/k8s/mod.ts";
import { type ApiRequest, type ApiResponse, type ApiTransport } from "../../lib/k8s/transport.ts";
import { createReflector, proxyResources } from "../../lib/k8s/mod.ts";
import { FakeClock } from "../support/fake_clock.ts";

const enc = new TextEncoder();

/** A minimal API server for one collection. */
class MemoryApi implements ApiTransport {
  readonly server = "memory://";
  readonly objects = new Map<string, KubeObject>();
  rv = 10;
  /** Answers for the next requests, before any real one: [status, retryAfterSeconds?]. */
  readonly failures: [number, number?][] = [];
  /** Rewrites the next list answer's text (a cut or corrupted body). */
  editNextList: ((text: string) => string) | undefined;
  /** When each request arrived (clock time) and what it was. */
  readonly log: { at: number; verb: string; status: number }[] = [];
  readonly #watches = new Set<ReadableStreamDefaultController<Uint8Array>>();

  constructor(readonly clock: FakeClock) {}

  put(name: string, port: number, meta: Record<string, unknown> = {}): void {
    this.rv++;
    const obj = {
      metadata: { name, namespace: "ns", resourceVersion: String(this.rv), ...meta },
      port,
    };
    const type = this.objects.has(name) ? "MODIFIED" : "ADDED";
    this.objects.set(name, obj);
    this.#send(JSON.stringify({ type, object: obj }) + "\n");
  }

  #send(line: string): void {
    for (const w of this.#watches) w.enqueue(enc.encode(line));
  }

  request(req: ApiRequest): Promise<ApiResponse> {
    const verb = req.query?.watch === "true" ? "watch" : "list";
    const failure = this.failures.shift();
    if (failure) {
      this.log.push({ at: this.clock.now(), verb, status: failure[0] });
      const headers: Record<string, string> = failure[1] !== undefined
        ? { "retry-after": String(failure[1]) }
        : {};
      return Promise.resolve(reply(failure[0], JSON.stringify({ code: failure[0] }), headers));
    }
    this.log.push({ at: this.clock.now(), verb, status: 200 });
    if (verb === "list") {
      const body = {
        metadata: { resourceVersion: String(this.rv) },
        items: [...this.objects.values()],
      };
      const edit = this.editNextList ?? ((text) => text);
      this.editNextList = undefined;
      return Promise.resolve(reply(200, edit(JSON.stringify(body))));
    }
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (c) => {
        controller = c;
        this.#watches.add(c);
      },
      cancel: () => {
        this.#watches.delete(controller);
      },
    });
    req.signal?.addEventListener("abort", () => {
      if (this.#watches.delete(controller)) {
        controller.error(new DOMException("aborted", "AbortError"));
      }
    });
    return Promise.resolve({ ...reply(200, ""), body });
  }

  get openWatches(): number {
    return this.#watches.size;
  }
}

function reply(status: number, text: string, headers: Record<string, string> = {}): ApiResponse {
  return {
    status,
    headers,
    body: null,
    text: () => Promise.resolve(text),
    bytes: () => Promise.resolve(enc.encode(text)),
    close: () => Promise.resolve(),
  };
}

function setup() {
  const clock = new FakeClock({ startMs: 0 });
  const api = new MemoryApi(clock);
  const changes: string[] = [];
  let synced = 0;
  const reflector = createReflector({
    resource: proxyResources("node-1")[0]!,
    transport: api,
    onChange: (type, o) => changes.push(`${type} ${o.metadata?.name}`),
    onSynced: () => synced++,
    clock,
    random: () => 0,
    backoff: { random: () => 0 },
    idleTimeoutMs: 60_000,
  });
  return { clock, api, changes, reflector, synced: () => synced };
}

function createReflectorLike(api: MemoryApi, clock: FakeClock, seen: KubeObject[]) {
  return createReflector({
    resource: proxyResources("node-1")[0]!,
    transport: api,
    onChange: (_type, o) => seen.push(o),
    onSynced: () => {},
    clock,
    random: () => 0,
    backoff: { random: () => 0 },
    idleTimeoutMs: 60_000,
  });
}

Deno.test("reflector backs off 800 ms doubling on 500s, then lists and watches", async () => {
  const { clock, api, changes, reflector, synced } = setup();
  api.put("web", 80);
  api.failures.push([500], [500], [500]);
  const ac = new AbortController();
  const done = reflector.start(ac.signal);
  await clock.advance(10_000);
  assert.deepEqual(api.log.map((r) => [r.at, r.verb, r.status]), [
    [0, "list", 500],
    [800, "list", 500],
    [2400, "list", 500],
    [5600, "list", 200],
    [5600, "watch", 200],
  ]);
  assert.equal(synced(), 1);
  assert.deepEqual(changes, ["ADDED web"]);
  api.put("web", 81);
  await clock.flush();
  assert.deepEqual(changes, ["ADDED web", "MODIFIED web"]);
  ac.abort();
  await done;
  assert.equal(clock.pendingTimers, 0);
  assert.equal(api.openWatches, 0);
});

Deno.test("reflector hands on nothing of a list cut mid-body, and all of the next one", async () => {
  const { clock, api, changes, reflector, synced } = setup();
  for (const name of ["a", "b", "c"]) api.put(name, 80);
  api.editNextList = (text) => text.slice(0, text.indexOf('"name":"c"'));
  const ac = new AbortController();
  const done = reflector.start(ac.signal);
  await clock.advance(1);
  assert.deepEqual(changes, []);
  await clock.advance(800);
  assert.deepEqual(api.log.map((r) => [r.at, r.verb]), [[0, "list"], [800, "list"], [
    800,
    "watch",
  ]]);
  assert.deepEqual(changes, ["ADDED a", "ADDED b", "ADDED c"]);
  assert.equal(synced(), 1);
  assert.equal(reflector.stats().errors, 1);
  ac.abort();
  await done;
});

Deno.test("reflector resumes a list that failed at a corrupt object without handing anything on twice", async () => {
  const { clock, api, changes, reflector, synced } = setup();
  for (const name of ["a", "b", "c"]) api.put(name, 80);
  api.editNextList = (text) => {
    const at = text.indexOf('"port":80}', text.indexOf('"name":"b"'));
    return `${text.slice(0, at)}"port":080${text.slice(at + 9)}`;
  };
  const ac = new AbortController();
  const done = reflector.start(ac.signal);
  await clock.advance(1);
  // Objects are handed on as they are decoded: "a" went before the list failed at "b"; the
  // list is not complete, so nothing is synced yet and nothing is deleted.
  assert.deepEqual(changes, ["ADDED a"]);
  assert.equal(synced(), 0);
  assert.deepEqual([...reflector.versions()], [["ns/a", "11"]]);
  await clock.advance(800);
  assert.deepEqual(changes, ["ADDED a", "ADDED b", "ADDED c"]);
  assert.equal(synced(), 1);
  ac.abort();
  await done;
});

Deno.test("reflector drops managedFields from listed and watched objects", async () => {
  const { clock, api } = setup();
  const managedFields = [{ manager: "kubectl", operation: "Apply", fieldsV1: { "f:port": {} } }];
  const seen: KubeObject[] = [];
  api.put("listed", 80, { managedFields, labels: { app: "a" } });
  const ac = new AbortController();
  const loop = createReflectorLike(api, clock, seen);
  const done = loop.start(ac.signal);
  await clock.advance(1);
  api.put("watched", 81, { managedFields });
  await clock.flush();
  assert.deepEqual(seen.map((o) => o.metadata), [
    { name: "listed", namespace: "ns", resourceVersion: "11", labels: { app: "a" } },
    { name: "watched", namespace: "ns", resourceVersion: "12" },
  ]);
  assert.deepEqual([...loop.versions()], [["ns/listed", "11"], ["ns/watched", "12"]]);
  ac.abort();
  await done;
});

Deno.test("reflector waits for Retry-After on 429 instead of its own backoff", async () => {
  const { clock, api, reflector } = setup();
  api.failures.push([429, 7]);
  const ac = new AbortController();
  const done = reflector.start(ac.signal);
  await clock.advance(6_999);
  assert.equal(api.log.length, 1);
  await clock.advance(1);
  assert.deepEqual(api.log.map((r) => [r.at, r.verb, r.status]), [
    [0, "list", 429],
    [7000, "list", 200],
    [7000, "watch", 200],
  ]);
  ac.abort();
  await done;
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("reflector drops a silent watch after the idle timeout and resumes from its resourceVersion", async () => {
  const { clock, api, reflector } = setup();
  api.put("web", 80);
  const ac = new AbortController();
  const done = reflector.start(ac.signal);
  await clock.advance(0);
  assert.equal(api.openWatches, 1);
  await clock.advance(59_999);
  assert.equal(reflector.stats().idleTimeouts, 0);
  await clock.advance(1);
  assert.equal(reflector.stats().idleTimeouts, 1);
  assert.deepEqual(api.log.map((r) => [r.at, r.verb]), [[0, "list"], [0, "watch"], [
    60_000,
    "watch",
  ]]);
  assert.equal(reflector.resourceVersion(), "11");
  assert.equal(reflector.stats().lists, 1);
  ac.abort();
  await done;
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("reflector counts a change its handler threw on and hands it on again at the next list", async () => {
  const clock = new FakeClock({ startMs: 0 });
  const api = new MemoryApi(clock);
  const changes: string[] = [];
  const failures: unknown[] = [];
  let throwNext = false;
  const reflector = createReflector({
    resource: proxyResources("node-1")[0]!,
    transport: api,
    onChange: (type, o) => {
      if (throwNext) {
        throwNext = false;
        throw new Error("tracker refused it");
      }
      changes.push(`${type} ${o.metadata?.name} ${(o as { port?: number }).port}`);
    },
    onSynced: () => {},
    onHandlerError: (err) => failures.push(err),
    clock,
    random: () => 0,
    backoff: { random: () => 0 },
    idleTimeoutMs: 60_000,
  });
  api.put("web", 80);
  const ac = new AbortController();
  const done = reflector.start(ac.signal);
  await clock.flush();
  throwNext = true;
  api.put("web", 81);
  await clock.flush();
  assert.deepEqual(changes, ["ADDED web 80"]);
  assert.equal(failures.length, 1);
  assert.equal(reflector.stats().handlerErrors, 1);
  // The next list (here after a 410) hands the change on again, though its version is unchanged.
  api.failures.push([410]);
  await clock.advance(61_000);
  assert.deepEqual(changes, ["ADDED web 80", "MODIFIED web 81"]);
  ac.abort();
  await done;
});
