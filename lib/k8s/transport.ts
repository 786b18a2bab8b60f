/**
 * The one place HTTP happens. Every request is authenticated by client-node's KubeConfig
 * (`applySecurityAuthentication`: bearer token, token file, client certificate, exec plugin,
 * cluster CA) and sent with client-node's own fetch (undici with the dispatcher KubeConfig
 * builds), so no TLS or auth handling is hand-written here.
 */
import {
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  type KubeConfig,
  RequestContext,
} from "@kubernetes/client-node";
import { ApiConnectionError } from "./api_errors.ts";
import { type RequestLimiter, unlimited } from "./rate_limiter.ts";

/** One request to the API server. */
export interface ApiRequest {
  readonly method: "GET" | "POST";
  /** Path below the server URL, e.g. "/api/v1/services". */
  readonly path: string;
  readonly query?: Readonly<Record<string, string>>;
  /** Sent as JSON. */
  readonly body?: unknown;
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
  /** Releases the connection; safe to call more than once. */
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

/** What client-node's dispatcher (an undici Agent) offers for cleanup. */
interface Closable {
  destroy?(): Promise<void>;
}

function errorMessage(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = (err as { cause?: unknown }).cause;
  if (cause instanceof Error && cause.message && cause.message !== err.message) {
    return `${err.message}: ${cause.message}`;
  }
  return err.message;
}

/** Creates the real transport over a loaded KubeConfig. */
export function createKubeTransport(
  kubeConfig: KubeConfig,
  options: KubeTransportOptions = {},
): ApiTransport {
  const limiter = options.limiter ?? unlimited;
  const userAgent = options.userAgent ?? "deno-kube-proxy";
  const http = new IsomorphicFetchHttpLibrary();
  const server = kubeConfig.getCurrentCluster()?.server ?? "";

  return {
    server,
    async request(request: ApiRequest): Promise<ApiResponse> {
      await limiter.wait(request.signal);
      const cluster = kubeConfig.getCurrentCluster();
      if (!cluster) throw new ApiConnectionError("The kubeconfig has no current cluster");
      const url = new URL(cluster.server + request.path);
      for (const [k, v] of Object.entries(request.query ?? {})) url.searchParams.set(k, v);
      const context = new RequestContext(url.toString(), HttpMethod[request.method]);
      context.setHeaderParam("Accept", "application/json");
      context.setHeaderParam("User-Agent", userAgent);
      if (request.body !== undefined) {
        context.setHeaderParam("Content-Type", "application/json");
        context.setBody(JSON.stringify(request.body));
      }
      try {
        await kubeConfig.applySecurityAuthentication(context);
      } catch (err) {
        throw new ApiConnectionError(
          `Cannot prepare credentials for ${server}: ${errorMessage(err)}`,
          { cause: err },
        );
      }
      if (request.signal) context.setSignal(request.signal);
      // KubeConfig builds a fresh undici Agent per request; destroy it so no socket outlives us.
      const dispatcher = context.getDispatcher() as Closable | undefined;
      let closed = false;
      const close = async () => {
        if (closed) return;
        closed = true;
        await dispatcher?.destroy?.().catch(() => {});
      };
      let response;
      try {
        response = await http.send(context).toPromise();
      } catch (err) {
        await close();
        throw new ApiConnectionError(
          `Cannot reach the API server ${server}: ${errorMessage(err)}`,
          { cause: err },
        );
      }
      const body = (response.body.stream() ?? null) as ReadableStream<Uint8Array> | null;
      return {
        status: response.httpStatusCode,
        headers: response.headers,
        body,
        async text() {
          if (!body) return "";
          return await new Response(body).text();
        },
        async close() {
          if (body && !closed) await body.cancel().catch(() => {});
          await close();
        },
      };
    },
  };
}
