/**
 * The test API server: the handler served over TLS with node:https (the only server in Deno
 * 2.9.6 that can request and verify client certificates: Deno.serve / Deno.listenTls cannot),
 * plus the fault-injection methods tests drive.
 */
import https from "node:https";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { AuthOptions } from "./auth.ts";
import { createTestPki, type TestPki } from "./certs.ts";
import {
  type FailOptions,
  Faults,
  type RequestMatch,
  requestMatches,
  type RequestRecord,
} from "./faults.ts";
import { handleApiRequest } from "./handler.ts";
import { resourceTypeOfKind } from "./resources.ts";
import { type KubeObject, ObjectStore, type WriteOptions } from "./store.ts";
import { WatchStream } from "./watch.ts";

/** Options of startTestApiServer. */
export interface TestApiServerOptions {
  /** Port to listen on (default 0: a free one, kept across stop()/start()). */
  readonly port?: number;
  /** Address to listen on (default 127.0.0.1). */
  readonly hostname?: string;
  /** Certificates (default: a fresh PKI in a temp dir). */
  readonly pki?: TestPki;
  readonly auth?: AuthOptions;
  /** Interval of bookmarks for watches with allowWatchBookmarks (default 60000 ms). */
  readonly bookmarkIntervalMs?: number;
  /** Changes kept for watch replay (default 1000). */
  readonly historyLimit?: number;
  /**
   * Honour limit on resourceVersion=0 lists (default false: such a list is answered whole from
   * the current state, as kube-apiserver's watch cache does up to 1.32).
   */
  readonly pageWatchCacheLists?: boolean;
  /** Do not listen yet: the server is "down" until start() (default false). */
  readonly startStopped?: boolean;
}

/** Options of restart(). */
export interface RestartOptions {
  /** Forget the history and jump to a new resourceVersion sequence: old RVs get 410. */
  readonly newHistory?: boolean;
}

/** Creates the PKI if needed, then starts (or, with startStopped, only prepares) the server. */
export async function startTestApiServer(opts: TestApiServerOptions = {}): Promise<TestApiServer> {
  const server = opts.pki !== undefined
    ? new TestApiServer(opts.pki, opts)
    : new TestApiServer(await createTestPki(), opts, { ownsPki: true });
  if (opts.startStopped) await server.reservePort();
  else await server.start();
  return server;
}

/** A Kubernetes API server for tests; see mod.ts for the overview. */
export class TestApiServer {
  /** The objects; writes here reach open watches. */
  readonly store: ObjectStore;
  readonly faults = new Faults();
  readonly #watches = new Set<WatchStream>();
  readonly #sockets = new Set<Socket>();
  #server: https.Server | undefined;
  #port: number;
  readonly #hostname: string;
  readonly #bookmarkIntervalMs: number;
  /** The PKI's directory was made for this server alone: the first close() removes it. */
  #ownsPki: boolean;

  constructor(
    readonly pki: TestPki,
    readonly options: TestApiServerOptions = {},
    ownership: { readonly ownsPki?: boolean } = {},
  ) {
    this.#ownsPki = ownership.ownsPki ?? false;
    this.store = new ObjectStore(
      options.historyLimit !== undefined ? { historyLimit: options.historyLimit } : {},
    );
    this.#port = options.port ?? 0;
    this.#hostname = options.hostname ?? "127.0.0.1";
    this.#bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
  }

  /** The port (fixed after the first start or reservePort). */
  get port(): number {
    return this.#port;
  }

  /** "https://127.0.0.1:<port>". */
  get url(): string {
    return `https://${this.#hostname}:${this.#port}`;
  }

  /** True while listening. */
  get running(): boolean {
    return this.#server !== undefined;
  }

  /** Picks a free port now without serving, so a client can be pointed at a down server. */
  async reservePort(): Promise<void> {
    if (this.#port !== 0) return;
    const l = Deno.listen({ hostname: this.#hostname, port: 0 });
    this.#port = (l.addr as Deno.NetAddr).port;
    l.close();
    await Promise.resolve();
  }

  /** Starts listening (on the same port as before, if it ran already). */
  start(): Promise<void> {
    if (this.#server !== undefined) return Promise.resolve();
    const server = https.createServer({
      key: this.pki.serverKey,
      cert: this.pki.serverCert,
      ca: this.pki.caCert,
      requestCert: true,
      rejectUnauthorized: false,
    }, (req, res) => this.#onRequest(req, res));
    server.on("secureConnection", (sock: Socket) => this.#track(sock));
    server.on("connection", (sock: Socket) => this.#track(sock));
    this.#server = server;
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.#port, this.#hostname, () => {
        this.#port = (server.address() as { port: number }).port;
        server.off("error", reject);
        resolve();
      });
    });
  }

  /** Stops listening and drops every connection (watches are cut). */
  async stop(): Promise<void> {
    const server = this.#server;
    if (server === undefined) return;
    this.#server = undefined;
    this.cutStreams();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of this.#sockets) s.destroy();
    this.#sockets.clear();
    await closed;
  }

  /** stop() then start() on the same port; with newHistory, old resourceVersions get 410. */
  async restart(opts: RestartOptions = {}): Promise<void> {
    await this.stop();
    if (opts.newHistory) this.store.newHistory();
    await this.start();
  }

  /** Stops the server and forgets pending faults; for test cleanup. */
  async close(): Promise<void> {
    this.faults.clear();
    await this.stop();
    if (this.#ownsPki) {
      this.#ownsPki = false;
      await Deno.remove(this.pki.dir, { recursive: true });
    }
  }

  /** For `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  /** Drops every open watch connection abruptly (no terminating chunk). */
  cutStreams(): number {
    const n = this.#watches.size;
    for (const w of [...this.#watches]) w.cut();
    return n;
  }

  /** Open watches go silent (no events, bookmarks or end) while their connections stay open. */
  stallStreams(): number {
    for (const w of this.#watches) w.stall();
    return this.#watches.size;
  }

  /** Compacts the history: a watch from any resourceVersion a client has seen gets ERROR 410. */
  expireHistory(): void {
    this.store.compact();
  }

  /** Writes a line that is not JSON to every open watch. */
  sendMalformedLine(line = '{"type":"MODIFIED","object":{"kind":'): number {
    for (const w of this.#watches) w.writeRaw(`${line}\n`);
    return this.#watches.size;
  }

  /** The next `n` requests (matching opts.match) get `status`, e.g. 500 or 429 + Retry-After. */
  failNext(n: number, status: number, opts: FailOptions = {}): void {
    this.faults.failNext(n, status, opts);
  }

  /** The next `n` matching requests get no answer at all (the connection stays open). */
  hangNext(n: number, match: RequestMatch = {}): void {
    this.faults.failNext(n, 0, { match });
  }

  /** Requests answered so far, optionally only the matching ones. */
  requests(match: RequestMatch = {}): RequestRecord[] {
    return this.faults.log.filter((r) => requestMatches(r, match));
  }

  /** How many requests matched, e.g. count({ verb: "list", resource: "services" }). */
  count(match: RequestMatch = {}): number {
    return this.requests(match).length;
  }

  /** Open watches, optionally of one resource ("services"). */
  openWatches(resource?: string): number {
    return [...this.#watches].filter((w) =>
      resource === undefined || w.request.type.resource === resource
    ).length;
  }

  /** Resolves when `count(match) >= n` (polling every 20 ms), or rejects after `timeoutMs`. */
  async waitForRequests(match: RequestMatch, n = 1, timeoutMs = 10_000): Promise<RequestRecord[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const got = this.requests(match);
      if (got.length >= n) return got;
      if (Date.now() > deadline) {
        throw new Error(
          `Expected ${n} request(s) matching ${JSON.stringify(match)} within ${timeoutMs} ms, ` +
            `got ${got.length}; log: ${
              this.faults.log.map((r) => `${r.method} ${r.url} ${r.status}`).join("; ")
            }`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Resolves when at least `n` watches of `resource` are open, or rejects after `timeoutMs`. */
  async waitForWatches(resource: string | undefined, n = 1, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (this.openWatches(resource) < n) {
      if (Date.now() > deadline) {
        throw new Error(
          `Expected ${n} open watch(es) of ${
            resource ?? "any resource"
          } within ${timeoutMs} ms, got ${this.openWatches(resource)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Creates an object (validated unless opts.validate is false). */
  create(obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    return this.store.create(obj, opts);
  }

  /** Replaces an object (validated unless opts.validate is false). */
  update(obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    return this.store.update(obj, opts);
  }

  /** Creates or replaces an object. */
  apply(obj: KubeObject, opts: WriteOptions = {}): KubeObject {
    return this.store.apply(obj, opts);
  }

  /** Inserts or replaces an object exactly as given, skipping defaulting and validation. */
  insertInvalid(obj: KubeObject): KubeObject {
    return this.store.apply(obj, { validate: false });
  }

  /** Deletes an object by kind, namespace (ignored for Nodes) and name. */
  delete(kind: string, namespace: string | undefined, name: string): KubeObject {
    resourceTypeOfKind(kind);
    return this.store.delete(kind, namespace, name);
  }

  /** The events.k8s.io Events clients have posted. */
  events(): KubeObject[] {
    return this.store.list("Event");
  }

  #track(sock: Socket): void {
    if (this.#sockets.has(sock)) return;
    this.#sockets.add(sock);
    sock.on("close", () => this.#sockets.delete(sock));
  }

  #onRequest(req: IncomingMessage, res: ServerResponse): void {
    this.#track(req.socket as Socket);
    const chunks: Uint8Array[] = [];
    req.on("data", (c: Uint8Array) => chunks.push(c));
    req.on("end", () => {
      const body = new TextDecoder().decode(concat(chunks));
      // deno-lint-ignore no-explicit-any
      const tls = req.socket as any;
      let cn: string | undefined;
      if (tls.authorized === true) {
        const subject = tls.getPeerCertificate?.()?.subject;
        cn = typeof subject?.CN === "string" ? subject.CN : undefined;
      }
      const reply = handleApiRequest({
        store: this.store,
        faults: this.faults,
        auth: this.options.auth ?? {},
        list: { pageWatchCacheLists: this.options.pageWatchCacheLists ?? false },
      }, {
        method: req.method ?? "GET",
        url: req.url ?? "/",
        authorization: typeof req.headers.authorization === "string"
          ? req.headers.authorization
          : null,
        body,
        ...(cn !== undefined ? { certCommonName: cn } : {}),
        ...(typeof req.headers.accept === "string" ? { accept: req.headers.accept } : {}),
      });
      if ("watch" in reply) {
        res.writeHead(200, {
          "content-type": "application/json",
          "cache-control": "no-cache, private",
          "transfer-encoding": "chunked",
        });
        res.flushHeaders();
        const stream = new WatchStream(
          reply.watch,
          {
            write: (text) => res.write(text),
            end: () => res.end(),
            destroy: () => res.socket?.destroy(),
          },
          this.store,
          { bookmarkIntervalMs: this.#bookmarkIntervalMs },
        );
        if (stream.closed) return;
        this.#watches.add(stream);
        stream.onClose = () => this.#watches.delete(stream);
        res.on("close", () => stream.detach());
        return;
      }
      if (reply.status === 0) return;
      if (reply.body instanceof Uint8Array) {
        res.writeHead(reply.status, { ...(reply.headers ?? {}) });
        res.end(reply.body);
        return;
      }
      const text = typeof reply.body === "string" ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status, {
        "content-type": typeof reply.body === "string"
          ? "text/plain; charset=utf-8"
          : "application/json",
        ...(reply.headers ?? {}),
      });
      res.end(text);
    });
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.length;
  }
  return out;
}
