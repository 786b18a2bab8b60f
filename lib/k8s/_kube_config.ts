/**
 * The part of client-node's KubeConfig we use (current context, cluster, user, and the TLS
 * material and headers a request needs), loading only what is used: `import
 * "@kubernetes/client-node"` loads the whole generated API (most of the resident memory and
 * start-up time),
 * and so does its config.js. The entries are read by kubeconfig_entries.ts in client-node's
 * shapes; client-node's exec_auth.js runs exec credential plugins, loaded at the first request of
 * a user that has one (it brings node:child_process); a token file is re-read as client-go does
 * (token_file.ts). Only a user with a legacy auth-provider (oidc, gcp, azure) loads the full
 * client-node, at its first request.
 */
import type { Cluster, Context, User } from "@kubernetes/client-node/dist/config_types.js";
import type { ExecAuth } from "@kubernetes/client-node/dist/exec_auth.js";
import { parse } from "yaml";
import { type Clock, systemClock } from "../sync/mod.ts";
import { type KubeConfigEntries, kubeConfigEntries } from "./_kubeconfig_entries.ts";
import { TokenFileSource } from "./_token_file.ts";

export type { Cluster, Context, KubeConfigEntries, User };

/** What a request needs, in https.RequestOptions' shape (as client-node fills it in). */
export interface HttpsOptions {
  headers: Record<string, unknown>;
  ca?: Uint8Array | string;
  cert?: Uint8Array | string;
  key?: Uint8Array | string;
  /** "user:password" for basic auth. */
  auth?: string;
  rejectUnauthorized?: boolean;
  servername?: string;
}

/** Options of the KubeConfig constructor. */
export interface KubeConfigOptions {
  /** When token files were read; they are read again a minute later. Default systemClock. */
  readonly clock?: Clock;
  /** Told of a token file that could not be read again (the previous token stays in use). */
  readonly onTokenFileReadError?: (path: string, err: unknown) => void;
}

/** The authProvider names handled here; any other loads the full client-node. */
const LEAN_AUTH_PROVIDERS = new Set(["tokenFile", "exec"]);

function bytesFromFileOrData(file: string | undefined, data: string | undefined) {
  if (file) return Deno.readFileSync(file);
  if (data) return Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
  return undefined;
}

/** A loaded kubeconfig: its entries, and the credentials of its current context. */
export class KubeConfig {
  readonly #entries: KubeConfigEntries;
  readonly #clock: Clock;
  #onTokenFileReadError: KubeConfigOptions["onTokenFileReadError"];
  #exec: Promise<ExecAuth> | undefined;
  readonly #tokenFiles = new Map<string, TokenFileSource>();
  #full: Promise<{ applyToHTTPSOptions(opts: unknown): Promise<void> }> | undefined;

  constructor(entries: KubeConfigEntries, options: KubeConfigOptions = {}) {
    this.#entries = entries;
    this.#clock = options.clock ?? systemClock;
    this.#onTokenFileReadError = options.onTokenFileReadError;
  }

  /**
   * Reports each token file that cannot be read again to `report` (the previous token stays in
   * use, as client-go keeps it), for configs loaded before the reporter existed.
   */
  reportTokenFileReadErrors(report: (path: string, err: unknown) => void): void {
    this.#onTokenFileReadError = report;
  }

  /**
   * Parses kubeconfig YAML into client-node's entry shapes (kubeconfig_entries.ts); relative
   * files are resolved against `rootDirectory`, as client-go does.
   */
  static parse(text: string, rootDirectory: string, options: KubeConfigOptions = {}): KubeConfig {
    return new KubeConfig(kubeConfigEntries(parse(text), rootDirectory), options);
  }

  /** A config with one cluster and one user, as client-node's loadFromClusterAndUser. */
  static fromClusterAndUser(cluster: Cluster, user: User, options?: KubeConfigOptions) {
    const context: Context = { name: "loaded-context", cluster: cluster.name, user: user.name };
    return new KubeConfig({
      clusters: [cluster],
      contexts: [context],
      users: [user],
      currentContext: context.name,
    }, options);
  }

  /** The same config with other entries (the clock and error reporter are kept). */
  with(entries: Partial<KubeConfigEntries>): KubeConfig {
    return new KubeConfig({ ...this.#entries, ...entries }, {
      clock: this.#clock,
      ...(this.#onTokenFileReadError ? { onTokenFileReadError: this.#onTokenFileReadError } : {}),
    });
  }

  getClusters(): readonly Cluster[] {
    return this.#entries.clusters;
  }
  getContexts(): readonly Context[] {
    return this.#entries.contexts;
  }
  getUsers(): readonly User[] {
    return this.#entries.users;
  }
  getCurrentContext(): string {
    return this.#entries.currentContext;
  }
  getContextObject(name: string): Context | undefined {
    return this.#entries.contexts.find((c) => c.name === name);
  }
  getCluster(name: string): Cluster | undefined {
    return this.#entries.clusters.find((c) => c.name === name);
  }
  getUser(name: string): User | undefined {
    return this.#entries.users.find((u) => u.name === name);
  }
  getCurrentCluster(): Cluster | undefined {
    const context = this.getContextObject(this.getCurrentContext());
    return context ? this.getCluster(context.cluster) : undefined;
  }
  getCurrentUser(): User | undefined {
    const context = this.getContextObject(this.getCurrentContext());
    return context ? this.getUser(context.user) : undefined;
  }

  /**
   * Forgets cached credentials (exec plugin output, token file contents), so the next request
   * asks again: what client-go does when the server answers 401.
   */
  invalidateCredentials(): void {
    this.#exec = undefined;
    for (const source of this.#tokenFiles.values()) source.invalidate();
  }

  /** Fills in TLS material and auth headers for the current context (client-node's method). */
  async applyToHTTPSOptions(opts: HttpsOptions): Promise<void> {
    const cluster = this.getCurrentCluster();
    const user = this.getCurrentUser();
    if (!user) return;
    if (cluster?.skipTLSVerify) opts.rejectUnauthorized = false;
    if (cluster?.tlsServerName) opts.servername = cluster.tlsServerName;
    const ca = cluster ? bytesFromFileOrData(cluster.caFile, cluster.caData) : undefined;
    if (ca) opts.ca = ca;
    const cert = bytesFromFileOrData(user.certFile, user.certData);
    if (cert) opts.cert = cert;
    const key = bytesFromFileOrData(user.keyFile, user.keyData);
    if (key) opts.key = key;
    if (user.impersonateUser) opts.headers["Impersonate-User"] = user.impersonateUser;
    await this.#applyAuthProvider(user, opts);
    if (user.token) opts.headers.Authorization = `Bearer ${user.token}`;
    if (user.username) opts.auth = `${user.username}:${user.password}`;
  }

  async #applyAuthProvider(user: User, opts: HttpsOptions): Promise<void> {
    const provider = user.authProvider as
      | { name?: string; config?: Record<string, unknown> }
      | undefined;
    const tokenFile = provider?.config?.tokenFile;
    // ExecAuth.isAuthProvider's test, asked before exec_auth.js is loaded.
    if (user.exec || provider?.name === "exec" || provider?.config?.exec) {
      this.#exec ??= import("@kubernetes/client-node/dist/exec_auth.js").then((m) =>
        new m.ExecAuth()
      );
      // deno-lint-ignore no-explicit-any
      await (await this.#exec).applyAuthentication(user, opts as any);
    } else if (typeof tokenFile === "string" && tokenFile !== "") {
      let source = this.#tokenFiles.get(tokenFile);
      if (!source) {
        source = new TokenFileSource(tokenFile, {
          clock: this.#clock,
          onReadError: (err) => this.#onTokenFileReadError?.(tokenFile, err),
        });
        this.#tokenFiles.set(tokenFile, source);
      }
      const token = await source.token();
      if (token !== "") opts.headers.Authorization = `Bearer ${token}`;
    } else if (provider?.name && !LEAN_AUTH_PROVIDERS.has(provider.name)) {
      this.#full ??= this.#loadFull();
      const headers: Record<string, unknown> = {};
      await (await this.#full).applyToHTTPSOptions({ headers });
      Object.assign(opts.headers, headers);
    }
  }

  /** client-node's full KubeConfig, for auth providers only it knows (oidc, gcp, azure). */
  async #loadFull() {
    const { KubeConfig: Full } = await import("@kubernetes/client-node");
    const full = new Full();
    full.loadFromOptions({
      clusters: [...this.#entries.clusters],
      contexts: [...this.#entries.contexts],
      users: [...this.#entries.users],
      currentContext: this.#entries.currentContext,
    });
    return full as unknown as { applyToHTTPSOptions(opts: unknown): Promise<void> };
  }
}
