/**
 * The entries of a kubeconfig document (clusters, contexts, users, current-context) in
 * client-node's shapes and with its checks. Written here rather than taken from client-node's
 * config_types.js because that module imports node:fs (for one read of a `token-file` at load),
 * and node:fs with the Node streams it pulls in costs the proxy resident memory from start-up
 * on, for one read it does not need.
 *
 * Relative certificate, key and token files are resolved next to the kubeconfig, as client-go
 * does. A user with a token file and no inline token gets a `tokenFile` auth provider, which is
 * re-read (rotated service-account tokens); both spellings count: client-go's `tokenFile` and
 * client-node's `token-file`.
 */
import { isAbsolute, join } from "node:path";
import type { Cluster, Context, User } from "@kubernetes/client-node/dist/config_types.js";

/** The entries of a kubeconfig, as client-node's loadFromOptions takes them. */
export interface KubeConfigEntries {
  readonly clusters: readonly Cluster[];
  readonly contexts: readonly Context[];
  readonly users: readonly User[];
  readonly currentContext: string;
}

type Mapping = Record<string, unknown>;

function isMapping(value: unknown): value is Mapping {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The string at `key`, or undefined when it is absent or not a string. */
function text(entry: Mapping | undefined, key: string): string | undefined {
  const value = entry?.[key];
  return typeof value === "string" && value !== "" ? value : undefined;
}

function absolute(root: string, file: string | undefined): string | undefined {
  return file === undefined || isAbsolute(file) ? file : join(root, file);
}

/** The list at `key` of the document (client-node: anything else is no entries). */
function list(doc: Mapping, key: string): unknown[] {
  const value = doc[key];
  return Array.isArray(value) ? value : [];
}

/** The name of entry `i` and the entry, throwing as client-node does when it has none. */
function entryName(kind: string, entry: unknown, i: number): [string, Mapping] {
  const name = isMapping(entry) ? text(entry, "name") : undefined;
  if (name === undefined) throw new Error(`${kind}[${i}].name is missing`);
  return [name, entry as Mapping];
}

/** The named part of entry `i` (`cluster`, `context`), throwing as client-node does. */
function named(kind: string, part: string, entry: unknown, i: number): [string, Mapping] {
  const [name, mapping] = entryName(kind, entry, i);
  const body = mapping[part];
  if (!isMapping(body)) throw new Error(`${kind}[${i}].${part} is missing`);
  return [name, body];
}

/** Sets each field of `fields` whose value is defined (absent fields stay absent). */
function setDefined<T>(out: T, fields: readonly [keyof T, T[keyof T] | undefined][]): T {
  for (const [key, value] of fields) if (value !== undefined) out[key] = value;
  return out;
}

function parseCluster(entry: unknown, i: number, root: string): Cluster {
  const [name, cluster] = named("clusters", "cluster", entry, i);
  const server = text(cluster, "server");
  if (server === undefined) throw new Error(`clusters[${i}].cluster.server is missing`);
  const out: { -readonly [K in keyof Cluster]: Cluster[K] } = {
    name,
    server: server.replace(/\/$/, ""),
    skipTLSVerify: cluster["insecure-skip-tls-verify"] === true,
  };
  return setDefined(out, [
    ["caData", text(cluster, "certificate-authority-data")],
    ["caFile", absolute(root, text(cluster, "certificate-authority"))],
    ["tlsServerName", text(cluster, "tls-server-name")],
    ["proxyUrl", text(cluster, "proxy-url")],
  ]);
}

function parseContext(entry: unknown, i: number): Context {
  const [name, context] = named("contexts", "context", entry, i);
  const cluster = text(context, "cluster");
  if (cluster === undefined) throw new Error(`contexts[${i}].context.cluster is missing`);
  const namespace = text(context, "namespace");
  // client-node's Context types `user` as a string but leaves it undefined when absent.
  const user = text(context, "user") as string;
  return namespace === undefined ? { name, cluster, user } : { name, cluster, user, namespace };
}

function parseUser(entry: unknown, i: number, root: string): User {
  const [name, mapping] = entryName("users", entry, i);
  const user = isMapping(mapping.user) ? mapping.user : {};
  const out: { -readonly [K in keyof User]: User[K] } = { name };
  const token = text(user, "token");
  const tokenFile = absolute(root, text(user, "tokenFile") ?? text(user, "token-file"));
  setDefined(out, [
    ["certData", text(user, "client-certificate-data")],
    ["certFile", absolute(root, text(user, "client-certificate"))],
    ["keyData", text(user, "client-key-data")],
    ["keyFile", absolute(root, text(user, "client-key"))],
    ["token", token],
    ["username", text(user, "username")],
    ["password", text(user, "password")],
    ["impersonateUser", text(user, "as")],
  ]);
  if (user.exec !== undefined && user.exec !== null) out.exec = user.exec;
  if (token === undefined && tokenFile !== undefined) {
    out.authProvider = { name: "tokenFile", config: { tokenFile } };
  } else if (isMapping(user["auth-provider"])) {
    out.authProvider = user["auth-provider"];
  }
  return out;
}

/**
 * The entries of a parsed kubeconfig document, files resolved against `rootDirectory`; throws
 * an Error naming the first entry that lacks a name, a cluster's server or a context's cluster.
 */
export function kubeConfigEntries(doc: unknown, rootDirectory: string): KubeConfigEntries {
  if (doc === null || doc === undefined) doc = {};
  if (!isMapping(doc)) throw new Error("Expected a YAML mapping");
  const current = doc["current-context"];
  return {
    clusters: list(doc, "clusters").map((c, i) => parseCluster(c, i, rootDirectory)),
    contexts: list(doc, "contexts").map((c, i) => parseContext(c, i)),
    users: list(doc, "users").map((u, i) => parseUser(u, i, rootDirectory)),
    currentContext: typeof current === "string" ? current : "",
  };
}
