/**
 * Which API server to talk to and how to authenticate, exactly as kube-proxy decides it:
 * `--kubeconfig` (clientConnection.kubeconfig) with `--master` overriding its server, `--master`
 * alone, or the in-cluster service account when neither is given. Auth (token, token file,
 * client certificate, exec plugins) and TLS are kube_config.ts's lean KubeConfig.
 */
import { dirname } from "node:path";
import { errorMessage } from "../log/mod.ts";
import { type Cluster, KubeConfig } from "./_kube_config.ts";

/** Where client-node (and the kubelet) put the service-account token and CA in a pod. */
export const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";

/** What the command line and config file say about the connection. */
export interface KubeConfigChoice {
  /** `--kubeconfig` / clientConnection.kubeconfig; "" when unset. */
  readonly kubeconfig: string;
  /** `--master`; "" when unset. */
  readonly master: string;
  /**
   * Prefix put before SERVICE_ACCOUNT_DIR for the in-cluster files (as client-node's
   * `loadFromCluster(pathPrefix)`); "" in production, a temp dir in tests.
   */
  readonly serviceAccountPrefix?: string;
  /** Reads an environment variable; defaults to Deno.env.get. */
  readonly env?: (name: string) => string | undefined;
}

/** A loaded client configuration. */
export interface LoadedKubeConfig {
  readonly kubeConfig: KubeConfig;
  /** The API server URL requests go to. */
  readonly server: string;
  /** Where the configuration came from, for the log. */
  readonly origin: "kubeconfig" | "master" | "in-cluster";
}

/** Checks a `--master` value; returns it without a trailing slash. */
export function parseMasterUrl(master: string): string {
  let url: URL;
  try {
    url = new URL(master);
  } catch {
    throw new Error(`Invalid --master "${master}": expected a URL such as "https://10.0.0.1:6443"`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new Error(`Invalid --master "${master}": expected an http or https URL`);
  }
  return master.replace(/\/+$/, "");
}

/** The cluster with `server` replaced; plain http needs client-node's skipTLSVerify flag. */
function withServer(cluster: Cluster, server: string): Cluster {
  return {
    ...cluster,
    server,
    skipTLSVerify: server.startsWith("http:") ? true : cluster.skipTLSVerify,
  };
}

function loadFile(path: string, master: string): KubeConfig {
  let kc: KubeConfig;
  try {
    kc = KubeConfig.parse(Deno.readTextFileSync(path), dirname(path));
  } catch (err) {
    throw new Error(`Cannot load --kubeconfig "${path}": ${errorMessage(err)}`);
  }
  const context = kc.getContextObject(kc.getCurrentContext());
  if (!context) {
    throw new Error(
      `Invalid --kubeconfig "${path}": current-context "${kc.getCurrentContext()}" ` +
        "is not defined: expected a context naming a cluster and a user",
    );
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster) {
    throw new Error(
      `Invalid --kubeconfig "${path}": context "${context.name}" names cluster ` +
        `"${context.cluster}", which is not defined`,
    );
  }
  const server = master === "" ? "" : parseMasterUrl(master);
  return kc.with({
    clusters: kc.getClusters().map((c) =>
      server !== "" && c.name === cluster.name ? withServer(c, server) : c
    ),
  });
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

function loadMasterOnly(master: string): KubeConfig {
  const server = parseMasterUrl(master);
  return KubeConfig.fromClusterAndUser(
    withServer({ name: "master", server, skipTLSVerify: false }, server),
    { name: "anonymous" },
  );
}

function loadInCluster(choice: KubeConfigChoice): KubeConfig {
  const env = choice.env ?? ((name: string) => Deno.env.get(name));
  const host = env("KUBERNETES_SERVICE_HOST") ?? "";
  const port = env("KUBERNETES_SERVICE_PORT") ?? "";
  if (host === "" || port === "") {
    throw new Error(
      "No API server configured: pass --kubeconfig FILE or --master URL, run in a pod " +
        "(KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT set), or use --manifests PATH",
    );
  }
  const prefix = choice.serviceAccountPrefix ?? "";
  const token = `${prefix}${SERVICE_ACCOUNT_DIR}/token`;
  if (!exists(token)) {
    throw new Error(
      `Cannot use the in-cluster configuration: service-account token "${token}" does not exist`,
    );
  }
  // As client-node's loadFromCluster: the CA and a rotated token file from the pod; plain http
  // only on the usual insecure ports.
  const bracketed = host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
  const scheme = ["80", "8080", "8001"].includes(port) ? "http" : "https";
  return KubeConfig.fromClusterAndUser(
    {
      name: "inCluster",
      server: `${scheme}://${bracketed}:${port}`,
      caFile: `${prefix}${SERVICE_ACCOUNT_DIR}/ca.crt`,
      skipTLSVerify: false,
    },
    { name: "inClusterUser", authProvider: { name: "tokenFile", config: { tokenFile: token } } },
  );
}

/**
 * Builds the KubeConfig the way upstream kube-proxy does: a kubeconfig file (its server
 * replaced by `--master` when given), else `--master` alone (no credentials), else the pod's
 * service account. Throws an Error naming the flag or file when that cannot work.
 */
export function loadKubeConfig(choice: KubeConfigChoice): LoadedKubeConfig {
  let kubeConfig: KubeConfig;
  let origin: LoadedKubeConfig["origin"];
  if (choice.kubeconfig !== "") {
    kubeConfig = loadFile(choice.kubeconfig, choice.master);
    origin = "kubeconfig";
  } else if (choice.master !== "") {
    kubeConfig = loadMasterOnly(choice.master);
    origin = "master";
  } else {
    kubeConfig = loadInCluster(choice);
    origin = "in-cluster";
  }
  const cluster = kubeConfig.getCurrentCluster();
  const server = cluster?.server ?? "";
  const where = origin === "kubeconfig" ? `--kubeconfig "${choice.kubeconfig}"` : `"${server}"`;
  if (server.startsWith("https:") && cluster?.skipTLSVerify) {
    throw new Error(
      `Unsupported insecure-skip-tls-verify in ${where}: Deno cannot skip TLS verification; ` +
        "expected the cluster's certificate-authority",
    );
  }
  if (cluster?.tlsServerName) {
    throw new Error(
      `Unsupported tls-server-name "${cluster.tlsServerName}" in ${where}: expected a server ` +
        "URL whose host the API server's certificate names",
    );
  }
  return { kubeConfig, server, origin };
}

/** The host (and port) of an API server URL, as a `--allow-net` entry needs it. */
export function serverHost(server: string): string {
  try {
    return new URL(server).host;
  } catch {
    return server;
  }
}
