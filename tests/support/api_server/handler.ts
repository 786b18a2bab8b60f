/**
 * Request routing: authentication, authorization, injected faults, then list / get / watch /
 * create / update / patch / delete on the store. Pure apart from the store: it returns a Reply
 * the transport writes (a JSON body, or a watch to start).
 */
import { authenticate, type AuthOptions, authorize } from "./auth.ts";
import { discoveryDocument } from "./discovery.ts";
import type { Faults, RequestRecord } from "./faults.ts";
import { listObjects, type ListSettings } from "./list.ts";
import { apiVersionOf, parseResourcePath, type ResourcePath } from "./resources.ts";
import {
  matchesFields,
  matchesLabels,
  parseFieldSelector,
  parseLabelSelector,
} from "./selectors.ts";
import { failureStatus, type Status, StatusError } from "./status.ts";
import type { KubeObject, ObjectStore } from "./store.ts";
import type { WatchRequest } from "./watch.ts";

/** A request as the transport hands it over. */
export interface ApiRequest {
  readonly method: string;
  /** Path and query, e.g. "/api/v1/services?watch=1". */
  readonly url: string;
  readonly authorization: string | null;
  /** CN of a client certificate that verified against the CA. */
  readonly certCommonName?: string;
  readonly body: string;
  readonly accept?: string;
}

/** What to send back; status 0 means "never answer" (an injected hang). */
export type Reply =
  | {
    readonly status: number;
    readonly body: unknown;
    readonly headers?: Readonly<Record<string, string>>;
  }
  | { readonly status: 200; readonly watch: WatchRequest };

/** What the handler works on. */
export interface HandlerContext {
  readonly store: ObjectStore;
  readonly faults: Faults;
  readonly auth: AuthOptions;
  /** How lists treat limit on resourceVersion=0 (default: answered whole). */
  readonly list?: ListSettings;
}

function statusReply(s: Status, headers?: Record<string, string>): Reply {
  return { status: s.code, body: s, ...(headers ? { headers } : {}) };
}

function verbOf(method: string, path: ResourcePath | undefined, q: URLSearchParams): string {
  if (path === undefined) return "discovery";
  const watch = q.get("watch") === "1" || q.get("watch") === "true";
  switch (method) {
    case "GET":
      return watch ? "watch" : path.name === undefined ? "list" : "get";
    case "POST":
      return "create";
    case "PUT":
      return "update";
    case "PATCH":
      return "patch";
    case "DELETE":
      return "delete";
    default:
      return method.toLowerCase();
  }
}

/** Handles one request, recording it in `ctx.faults.log`. */
export function handleApiRequest(ctx: HandlerContext, req: ApiRequest): Reply {
  const url = new URL(req.url, "https://test-apiserver");
  const path = parseResourcePath(url.pathname);
  const verb = verbOf(req.method, path, url.searchParams);
  const record: RequestRecord = {
    time: Date.now(),
    method: req.method,
    url: req.url,
    verb,
    status: 0,
    ...(path ? { resource: path.type.resource } : {}),
    ...(req.accept !== undefined ? { accept: req.accept } : {}),
  };
  ctx.faults.log.push(record);
  const reply = route(ctx, req, url, path, verb, record);
  record.status = reply.status;
  return reply;
}

function route(
  ctx: HandlerContext,
  req: ApiRequest,
  url: URL,
  path: ResourcePath | undefined,
  verb: string,
  record: RequestRecord,
): Reply {
  const auth = authenticate(ctx.auth, req.authorization, req.certCommonName);
  if ("error" in auth) return statusReply(failureStatus(401, "Unauthorized"));
  const user = auth.identity.user;
  (record as { user?: string }).user = user;
  if (!authorize(ctx.auth, user, verb, path?.type.resource)) {
    const where = path?.namespace
      ? ` in the namespace "${path.namespace}"`
      : " at the cluster scope";
    return statusReply(
      failureStatus(
        403,
        `${path?.type.resource} is forbidden: User "${user}" cannot ${verb} resource ` +
          `"${path?.type.resource}" in API group "${path?.type.group}"${where}`,
        { kind: path?.type.resource ?? "" },
      ),
    );
  }
  const captured = ctx.faults.takeAnswer(record);
  if (captured !== undefined) {
    return {
      status: captured.status,
      body: captured.body,
      headers: { "content-type": captured.contentType },
    };
  }
  const fault = ctx.faults.take(record);
  if (fault !== undefined) {
    if (fault.status === 0) return { status: 0, body: null };
    const ra = fault.opts.retryAfterSeconds;
    const msg = fault.opts.message ??
      (fault.status === 429 ? "Too many requests, please try again later." : "Injected failure");
    return statusReply(
      failureStatus(fault.status, msg, ra !== undefined ? { retryAfterSeconds: ra } : undefined),
      ra !== undefined ? { "retry-after": String(ra) } : undefined,
    );
  }
  if (path === undefined) {
    const doc = req.method === "GET" ? discoveryDocument(url.pathname) : undefined;
    if (/^\/(healthz|livez|readyz)$/.test(url.pathname)) return { status: 200, body: "ok" };
    if (doc === undefined) {
      return statusReply(failureStatus(404, `The server could not find the requested resource`));
    }
    return { status: 200, body: doc };
  }
  try {
    return resourceRequest(ctx, req, url, path, verb);
  } catch (err) {
    if (err instanceof StatusError) return statusReply(err.status);
    return statusReply(failureStatus(500, `Internal error: ${(err as Error).message}`));
  }
}

function parseBody(req: ApiRequest): KubeObject {
  try {
    return JSON.parse(req.body);
  } catch (err) {
    throw new StatusError(failureStatus(400, `Invalid JSON body: ${(err as Error).message}`));
  }
}

function resourceRequest(
  ctx: HandlerContext,
  req: ApiRequest,
  url: URL,
  path: ResourcePath,
  verb: string,
): Reply {
  const { store } = ctx;
  const q = url.searchParams;
  const type = path.type;
  const withKind = (o: KubeObject) => ({ ...o, kind: type.kind, apiVersion: apiVersionOf(type) });
  let labels, fields;
  try {
    labels = parseLabelSelector(q.get("labelSelector") ?? "");
    fields = parseFieldSelector(q.get("fieldSelector") ?? "");
  } catch (err) {
    throw new StatusError(failureStatus(400, (err as Error).message));
  }
  if (verb === "watch") {
    if (path.name !== undefined) {
      fields = [...fields, parseFieldSelector(`metadata.name=${path.name}`)[0]!];
    }
    const timeout = q.get("timeoutSeconds");
    return {
      status: 200,
      watch: {
        type,
        labels,
        fields,
        resourceVersion: q.get("resourceVersion") ?? "",
        allowBookmarks: q.get("allowWatchBookmarks") === "true" ||
          q.get("allowWatchBookmarks") === "1",
        ...(path.namespace !== undefined ? { namespace: path.namespace } : {}),
        ...(timeout !== null && /^\d+$/.test(timeout) ? { timeoutSeconds: Number(timeout) } : {}),
        ...(q.get("sendInitialEvents") === "true" ? { sendInitialEvents: true } : {}),
      },
    };
  }
  if (verb === "get") {
    const o = store.get(type.kind, path.namespace, path.name!);
    if (o === undefined) {
      throw new StatusError(
        failureStatus(404, `${type.resource} "${path.name}" not found`, {
          name: path.name!,
          group: type.group,
          kind: type.resource,
        }),
      );
    }
    return { status: 200, body: withKind(o) };
  }
  if (verb === "list") {
    const { metadata, items } = listObjects(store, {
      query: q,
      kind: type.kind,
      matching: (o) =>
        (path.namespace === undefined || o.metadata?.namespace === path.namespace) &&
        matchesLabels(labels, o.metadata?.labels) && matchesFields(fields, o.metadata ?? {}),
      countRemaining: labels.length === 0 && fields.length === 0,
    }, ctx.list);
    for (const o of items) {
      delete o.kind;
      delete o.apiVersion;
    }
    return {
      status: 200,
      body: { kind: type.listKind, apiVersion: apiVersionOf(type), metadata, items },
    };
  }
  if (verb === "create" || verb === "update" || verb === "patch") {
    let body = parseBody(req);
    if (verb === "patch") {
      const old = store.get(type.kind, path.namespace, path.name ?? "");
      if (old === undefined) {
        throw new StatusError(failureStatus(404, `${type.resource} "${path.name}" not found`));
      }
      body = mergePatch(old, body);
    }
    if (typeof body !== "object" || body === null) {
      throw new StatusError(failureStatus(400, "Body is not an object"));
    }
    body.kind ??= type.kind;
    body.apiVersion ??= apiVersionOf(type);
    if (body.kind !== type.kind) {
      throw new StatusError(
        failureStatus(400, `Kind "${body.kind}" does not match the path: expected "${type.kind}"`),
      );
    }
    body.metadata ??= {};
    if (type.namespaced) {
      body.metadata.namespace ??= path.namespace;
      if (path.namespace !== undefined && body.metadata.namespace !== path.namespace) {
        throw new StatusError(
          failureStatus(
            400,
            "the namespace of the provided object does not match the namespace sent on the request",
          ),
        );
      }
    }
    if (path.name !== undefined && body.metadata.name !== path.name) {
      throw new StatusError(
        failureStatus(
          400,
          `The name in the body "${body.metadata.name}" does not match the path "${path.name}"`,
        ),
      );
    }
    if (verb === "create") return { status: 201, body: withKind(store.create(body)) };
    if (verb === "patch") delete body.metadata.resourceVersion;
    return { status: 200, body: withKind(store.update(body)) };
  }
  if (verb === "delete" && path.name !== undefined) {
    return { status: 200, body: withKind(store.delete(type.kind, path.namespace, path.name)) };
  }
  throw new StatusError(
    failureStatus(405, `Method "${req.method}" is not allowed on ${url.pathname}`),
  );
}

/** RFC 7386 JSON merge patch (the test server treats strategic merge patches the same way). */
function mergePatch(target: KubeObject, patch: KubeObject): KubeObject {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const out = typeof target === "object" && target !== null && !Array.isArray(target)
    ? { ...target }
    : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}
