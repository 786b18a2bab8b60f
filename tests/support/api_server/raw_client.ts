/**
 * Plain-fetch access to the test API server (no client library), for tests of the server and
 * for tests that need to look at the wire protocol directly.
 */
import { KUBE_PROXY_TOKEN } from "./auth.ts";
import type { TestApiServer } from "./server.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** Options of apiCall. */
export interface ApiCallOptions {
  /** Bearer token (default KUBE_PROXY_TOKEN); null sends none. */
  readonly token?: string | null;
  readonly method?: string;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** A client certificate and key (PEM). */
  readonly cert?: { readonly cert: string; readonly key: string };
}

/** One request; the body is parsed as JSON when it is JSON, else returned as text. */
export async function apiCall(
  server: TestApiServer,
  path: string,
  opts: ApiCallOptions = {},
): Promise<{ status: number; headers: Headers; json: Json }> {
  const client = Deno.createHttpClient({
    caCerts: [server.pki.caCert],
    ...(opts.cert ? { cert: opts.cert.cert, key: opts.cert.key } : {}),
  });
  try {
    const token = opts.token === undefined ? KUBE_PROXY_TOKEN : opts.token;
    const res = await fetch(`${server.url}${path}`, {
      client,
      method: opts.method ?? "GET",
      headers: {
        ...(token !== null ? { authorization: `Bearer ${token}` } : {}),
        ...(opts.body !== undefined ? { "content-type": "application/json" } : {}),
      },
      ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
    });
    const text = await res.text();
    let json: Json;
    try {
      json = JSON.parse(text);
    } catch {
      json = text;
    }
    return { status: res.status, headers: res.headers, json };
  } finally {
    client.close();
  }
}

/** An open watch read line by line. */
export interface RawWatch {
  /**
   * The next event as parsed JSON; "MALFORMED:<line>" for a line that is not JSON, "END" when
   * the server ended the stream, "ERROR:<message>" when the connection broke, or undefined
   * when nothing arrived within `ms` (default 2000).
   */
  next(ms?: number): Promise<Json | string | undefined>;
  close(): void;
}

/** Starts a watch (`path` includes `?watch=1...`); throws unless the answer is 200. */
export async function openWatch(
  server: TestApiServer,
  path: string,
  token: string = KUBE_PROXY_TOKEN,
): Promise<RawWatch> {
  const client = Deno.createHttpClient({ caCerts: [server.pki.caCert] });
  const ac = new AbortController();
  const res = await fetch(`${server.url}${path}`, {
    client,
    signal: ac.signal,
    headers: { authorization: `Bearer ${token}` },
  });
  if (res.status !== 200) {
    client.close();
    throw new Error(`Watch "${path}" answered ${res.status}: ${await res.text()}`);
  }
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  let pending: Promise<ReadableStreamReadResult<string>> | undefined;
  const next = async (ms = 2000): Promise<Json | string | undefined> => {
    for (;;) {
      const nl = buf.indexOf("\n");
      if (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        try {
          return JSON.parse(line);
        } catch {
          return `MALFORMED:${line}`;
        }
      }
      pending ??= reader.read();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const r = await Promise.race([
        pending.then((v) => v, (e) => ({ error: String(e) })),
        new Promise<"timeout">((res) => timer = setTimeout(() => res("timeout"), ms)),
      ]);
      clearTimeout(timer);
      if (r === "timeout") return undefined;
      pending = undefined;
      if ("error" in r) return `ERROR:${r.error}`;
      if (r.done) return "END";
      buf += r.value;
    }
  };
  return {
    next,
    close: () => {
      ac.abort();
      reader.cancel().catch(() => {});
      client.close();
    },
  };
}
