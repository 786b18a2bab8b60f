/**
 * The one place HTTP happens. Credentials and TLS material come from the KubeConfig
 * (`applyToHTTPSOptions`: bearer token, token file, exec plugin, client certificate, cluster
 * CA, basic auth), so none of that is hand-written here; the request itself goes through Deno's
 * own fetch with a `Deno.createHttpClient` holding that material. A 401 makes the KubeConfig
 * forget cached credentials (exec plugin output, token file), as client-go does.
 *
 * Why not client-node's own fetch (undici, which works for TLS and client certificates under
 * Deno 2.9.6): when the server drops a streaming connection, undici over Deno's node:net never
 * ends or errors the body, and aborting leaves a pending read hanging, so a cut watch would
 * only be noticed by the idle timeout. Deno's fetch reports both at once.
 */
import type { HttpsOptions, KubeConfig } from "./_kube_config.ts";
import { ApiConnectionError } from "./_api_errors.ts";
import { type RequestLimiter, unlimited } from "./rate_limiter.ts";

/** One request to the API server. */
export interface ApiRequest {
  readonly method: "GET" | "POST";
  /** Path below the server URL, e.g. "/api/v1/services". */
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  /** Sent as JSON. */
  readonly body?: unknown;
  /** The Accept header; default JSON alone. */
  readonly accept?: string;
  readonly signal?: AbortSignal;
}

/** The answer; the caller reads the body (stream or text) and must close() it. */
export interface ApiResponse {
  readonly status: number;
  /** Header names in lower case. */
  readonly headers: Readonly<Record<string, string>>;
  /** The body as a byte stream, or null when there is none. */
  readonly body: ReadableStream<Uint8Array> | null;
  /** Reads the whole body as text. */
  text(): Promise<string>;
  /** Reads the whole body as bytes. */
  bytes(): Promise<Uint8Array>;
  /** Releases the body and the connection; safe to call more than once. */
  close(): Promise<void>;
}

/** Sends requests to one API server. */
export interface ApiTransport {
  /** The server URL, for log lines. */
  readonly server: string;
  /** Sends a request; rejects with ApiConnectionError when no HTTP answer arrives. */
  request(request: ApiRequest): Promise<ApiResponse>;
}

/** Options of createKubeTransport. */
export interface KubeTransportOptions {
  /** qps/burst limiter every request waits on; default none. */
  readonly limiter?: RequestLimiter;
  readonly userAgent?: string;
}

/** What one request needs, as KubeConfig resolved it. */
export interface ResolvedCredentials {
  readonly headers: Record<string, string>;
  readonly client: Deno.CreateHttpClientOptions & { cert?: string; key?: string };
}

function messageWithCause(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error && cause.message && cause.message !== err.message) {
    return `${err.message}: ${cause.message}`;
  }
  return err.message;
}

function pem(v: Uint8Array | string | undefined): string | undefined {
  if (v === undefined) return undefined;
  return typeof v === "string" ? v : new TextDecoder().decode(v);
}

/**
 * Asks the KubeConfig for the current credentials (tokens and exec plugins are re-evaluated
 * on every call, as they expire) and maps them onto headers and Deno.createHttpClient options.
 */
export async function resolveCredentials(kubeConfig: KubeConfig): Promise<ResolvedCredentials> {
  const opts: HttpsOptions = { headers: {} };
  await kubeConfig.applyToHTTPSOptions(opts);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(opts.headers)) headers[k] = String(v);
  if (opts.auth) headers.Authorization = `Basic ${btoa(opts.auth)}`;
  const ca = pem(opts.ca);
  const cert = pem(opts.cert);
  const key = pem(opts.key);
  const proxy = kubeConfig.getCurrentCluster()?.proxyUrl;
  return {
    headers,
    client: {
      ...(ca ? { caCerts: [ca] } : {}),
      ...(cert && key ? { cert, key } : {}),
      ...(proxy ? { proxy: { url: proxy } } : {}),
    },
  };
}

/** Creates the real transport over a loaded KubeConfig. */
export function createKubeTransport(
  kubeConfig: KubeConfig,
  options: KubeTransportOptions = {},
): ApiTransport {
  const limiter = options.limiter ?? unlimited;
  const userAgent = options.userAgent ?? "deno-kube-proxy";
  const server = kubeConfig.getCurrentCluster()?.server ?? "";

  return {
    server,
    async request(request: ApiRequest): Promise<ApiResponse> {
      await limiter.wait(request.signal);
      const url = new URL(server + request.path);
      for (const [k, v] of Object.entries(request.query ?? {})) url.searchParams.set(k, v);
      let credentials: ResolvedCredentials;
      try {
        credentials = await resolveCredentials(kubeConfig);
      } catch (err) {
        throw new ApiConnectionError(
          `Cannot prepare credentials for ${server}: ${messageWithCause(err)}`,
          { cause: err },
        );
      }
      // One client per request, closed with the response: no pooled socket outlives its
      // request, and rotated certificates are picked up by the next request.
      const client = Deno.createHttpClient(credentials.client);
      let closed = false;
      const closeClient = () => {
        if (closed) return;
        closed = true;
        client.close();
      };
      let response: Response;
      try {
        response = await fetch(url, {
          method: request.method,
          client,
          headers: {
            ...credentials.headers,
            Accept: request.accept ?? "application/json",
            "User-Agent": userAgent,
            ...(request.body !== undefined ? { "Content-Type": "application/json" } : {}),
          },
          ...(request.body !== undefined ? { body: JSON.stringify(request.body) } : {}),
          ...(request.signal ? { signal: request.signal } : {}),
        });
      } catch (err) {
        closeClient();
        if (request.signal?.aborted) throw err;
        throw new ApiConnectionError(
          `Cannot reach the API server ${server}: ${messageWithCause(err)}`,
          { cause: err },
        );
      }
      if (response.status === 401) kubeConfig.invalidateCredentials();
      const headers: Record<string, string> = {};
      response.headers.forEach((value, name) => headers[name.toLowerCase()] = value);
      const body = response.body;
      const read = async <T>(whole: Promise<T>): Promise<T> => {
        try {
          return await whole;
        } catch (err) {
          if (request.signal?.aborted) throw err;
          throw new ApiConnectionError(
            `Cannot read the answer of ${server}: ${messageWithCause(err)}`,
            { cause: err },
          );
        }
      };
      return {
        status: response.status,
        headers,
        body,
        text: () => read(response.text()),
        bytes: () => read(response.bytes()),
        async close() {
          if (body && !body.locked) await body.cancel().catch(() => {});
          closeClient();
        },
      };
    },
  };
}
