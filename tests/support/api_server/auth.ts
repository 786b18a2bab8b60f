/**
 * Authentication (bearer tokens, client certificates) and a small RBAC model: kube-proxy's
 * identity gets what upstream's system:node-proxier role grants, an admin gets everything.
 */

/** The token kube-proxy uses by default; authenticates as KUBE_PROXY_USER. */
export const KUBE_PROXY_TOKEN = "kube-proxy-test-token";
/** A valid token whose user has no rights (every resource request gets 403). */
export const NO_RIGHTS_TOKEN = "no-rights-test-token";
/** A token with every right (to write Services over HTTP, for example). */
export const ADMIN_TOKEN = "admin-test-token";
/** The user behind KUBE_PROXY_TOKEN and the default client certificate's CN. */
export const KUBE_PROXY_USER = "system:kube-proxy";

/** Who may do what. */
export interface AuthOptions {
  /** token → user name (default: the three tokens above). */
  readonly tokens?: Readonly<Record<string, string>>;
  /** user → role; users not listed get "none" (default: kube-proxy "node-proxier", admin "admin"). */
  readonly roles?: Readonly<Record<string, Role>>;
}

/** "node-proxier": list/watch/get services, endpointslices, nodes, servicecidrs; create/update/patch events. */
export type Role = "node-proxier" | "admin" | "none";

/** An authenticated caller. */
export interface Identity {
  readonly user: string;
  /** "token" or "certificate". */
  readonly via: "token" | "certificate";
}

/** The result of authenticating a request: an identity, or why it failed (→ 401). */
export type AuthResult = { readonly identity: Identity } | { readonly error: string };

/** The default token table. */
export const DEFAULT_TOKENS: Readonly<Record<string, string>> = {
  [KUBE_PROXY_TOKEN]: KUBE_PROXY_USER,
  [NO_RIGHTS_TOKEN]: "system:serviceaccount:default:nobody",
  [ADMIN_TOKEN]: "admin",
};

const DEFAULT_ROLES: Readonly<Record<string, Role>> = {
  [KUBE_PROXY_USER]: "node-proxier",
  admin: "admin",
};

/** Authenticates by bearer token first, then by a verified client certificate's CN. */
export function authenticate(
  opts: AuthOptions,
  authorization: string | null,
  certCommonName: string | undefined,
): AuthResult {
  if (authorization !== null) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    const user = m ? (opts.tokens ?? DEFAULT_TOKENS)[m[1] ?? ""] : undefined;
    if (user === undefined) return { error: "invalid bearer token" };
    return { identity: { user, via: "token" } };
  }
  if (certCommonName !== undefined) {
    return { identity: { user: certCommonName, via: "certificate" } };
  }
  return { error: "no credentials" };
}

const NODE_PROXIER: Readonly<Record<string, readonly string[]>> = {
  services: ["get", "list", "watch"],
  endpointslices: ["get", "list", "watch"],
  nodes: ["get", "list", "watch"],
  servicecidrs: ["get", "list", "watch"],
  events: ["create", "update", "patch"],
};

/** True when `user` may do `verb` on `resource` (undefined resource: discovery, always allowed). */
export function authorize(
  opts: AuthOptions,
  user: string,
  verb: string,
  resource: string | undefined,
): boolean {
  if (resource === undefined) return true;
  const role = (opts.roles ?? DEFAULT_ROLES)[user] ?? "none";
  if (role === "admin") return true;
  if (role === "none") return false;
  return NODE_PROXIER[resource]?.includes(verb) ?? false;
}
