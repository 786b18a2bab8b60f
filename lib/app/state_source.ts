/**
 * Picks the source of cluster state from the configuration: `--manifests PATH` reads files;
 * otherwise the API server given by `--kubeconfig` / `--master` / the in-cluster service account
 * is listed and watched.
 */
import type { ProxyConfig } from "../config/mod.ts";
import {
  createApiSource,
  createKubeTransport,
  createTokenBucket,
  type KubeConfigChoice,
  loadKubeConfig,
  PROTOBUF_MEDIA_TYPE,
  serverHost,
} from "../k8s/mod.ts";
import { errorMessage, type Logger } from "../log/mod.ts";
import { createManifestSource, type ObjectSink, type ObjectSource } from "../source/mod.ts";
import { CommandFailure } from "./command_failure.ts";
import type { ProxyMetrics } from "../metrics/mod.ts";

/** client-go's Accept: acceptContentTypes when set, else contentType (protobuf by default). */
function acceptedTypes(connection: ProxyConfig["clientConnection"]): string {
  return connection.acceptContentTypes !== ""
    ? connection.acceptContentTypes
    : connection.contentType;
}

/**
 * Whether Services and EndpointSlices are listed in protobuf: when the accepted types name it,
 * as upstream's default contentType does. Other kinds and every watch are JSON either way.
 */
export function listsInProtobufFor(connection: ProxyConfig["clientConnection"]): boolean {
  return acceptedTypes(connection).includes(PROTOBUF_MEDIA_TYPE);
}

/** Builds a source for the sink the app hands over. */
export type SourceFactory = (sink: ObjectSink) => ObjectSource;

/** Seams of createStateSource (tests point the in-cluster files and env elsewhere). */
export interface StateSourceOptions {
  readonly serviceAccountPrefix?: KubeConfigChoice["serviceAccountPrefix"];
  readonly env?: KubeConfigChoice["env"];
  /** Whether Deno may connect to `host`; defaults to a permission query. */
  readonly netPermission?: (host: string) => boolean;
  /** Post the "Starting kube-proxy" Event (default true); `trace` must not write. */
  readonly postStartingEvent?: boolean;
  /** Counts token file re-reads and watch event handling that failed (both also logged). */
  readonly metrics?: Pick<ProxyMetrics, "tokenFileReadFailures" | "watchHandlerFailures">;
}

/**
 * Returns the factory of the configured source. Loads the kubeconfig now, so a missing or
 * broken file, or an API server the permission set does not let us reach, fails at start with
 * exit code 1; an API server that is down or rejects the credentials is not an error here: the
 * watch logs it and keeps retrying.
 */
export function createStateSource(
  config: ProxyConfig,
  logger: Logger,
  options: StateSourceOptions = {},
): SourceFactory {
  if (config.manifests !== "") {
    return (sink) =>
      createManifestSource({
        path: config.manifests,
        nodeName: config.hostnameOverride,
        sink,
        logger,
      });
  }
  const connection = config.clientConnection;
  let loaded;
  try {
    loaded = loadKubeConfig({
      kubeconfig: connection.kubeconfig,
      master: config.master,
      ...(options.serviceAccountPrefix !== undefined
        ? { serviceAccountPrefix: options.serviceAccountPrefix }
        : {}),
      ...(options.env ? { env: options.env } : {}),
    });
  } catch (err) {
    throw new CommandFailure(errorMessage(err), 1);
  }
  const host = serverHost(loaded.server);
  const canConnect = options.netPermission ??
    ((h: string) => Deno.permissions.querySync({ name: "net", host: h }).state === "granted");
  if (!canConnect(host)) {
    throw new CommandFailure(
      `No network permission for the API server "${host}": add it to the "proxy" permission ` +
        `set's net list in deno.json, or build with "deno task compile --api-server ${host}"`,
      1,
    );
  }
  const protobufLists = listsInProtobufFor(connection);
  logger.debug(2, "API encodings", {
    accepts: acceptedTypes(connection),
    lists: protobufLists ? "Services and EndpointSlices in protobuf, the rest in JSON" : "JSON",
    watches: "JSON",
  });
  logger.info("Using the API server", {
    server: loaded.server,
    from: loaded.origin,
    qps: connection.qps,
    burst: connection.burst,
  });
  const metrics = options.metrics;
  loaded.kubeConfig.reportTokenFileReadErrors((path, err) => {
    logger.error("Cannot read the token file again; using the previous token", { path, err });
    metrics?.tokenFileReadFailures.inc();
  });
  const transport = createKubeTransport(loaded.kubeConfig, {
    limiter: createTokenBucket({ qps: connection.qps, burst: connection.burst }),
  });
  const postStartingEvent = options.postStartingEvent ?? true;
  return (sink) =>
    createApiSource({
      transport,
      nodeName: config.hostnameOverride,
      sink,
      logger,
      postStartingEvent,
      protobufLists,
      ...(metrics ? { onHandlerError: (kind) => metrics.watchHandlerFailures.inc({ kind }) } : {}),
    });
}
