/** The resource types the test API server serves, and how request paths map onto them. */

/** One served resource type (e.g. services in core v1). */
export interface ResourceType {
  /** Plural lower-case name used in paths, e.g. "endpointslices". */
  readonly resource: string;
  readonly kind: string;
  readonly listKind: string;
  /** "" for the core group. */
  readonly group: string;
  readonly version: string;
  readonly namespaced: boolean;
}

/** Kinds the server knows, keyed by kind. */
export const RESOURCE_TYPES: Readonly<Record<string, ResourceType>> = {
  Service: {
    resource: "services",
    kind: "Service",
    listKind: "ServiceList",
    group: "",
    version: "v1",
    namespaced: true,
  },
  EndpointSlice: {
    resource: "endpointslices",
    kind: "EndpointSlice",
    listKind: "EndpointSliceList",
    group: "discovery.k8s.io",
    version: "v1",
    namespaced: true,
  },
  Node: {
    resource: "nodes",
    kind: "Node",
    listKind: "NodeList",
    group: "",
    version: "v1",
    namespaced: false,
  },
  ServiceCIDR: {
    resource: "servicecidrs",
    kind: "ServiceCIDR",
    listKind: "ServiceCIDRList",
    group: "networking.k8s.io",
    version: "v1",
    namespaced: false,
  },
  Event: {
    resource: "events",
    kind: "Event",
    listKind: "EventList",
    group: "events.k8s.io",
    version: "v1",
    namespaced: true,
  },
};

/** `apiVersion` as written in objects: "v1" or "group/version". */
export function apiVersionOf(type: ResourceType): string {
  return type.group === "" ? type.version : `${type.group}/${type.version}`;
}

/** The type for a kind, or a clear error naming the kinds served. */
export function resourceTypeOfKind(kind: unknown): ResourceType {
  const type = typeof kind === "string" ? RESOURCE_TYPES[kind] : undefined;
  if (type === undefined) {
    throw new Error(
      `Unknown kind ${JSON.stringify(kind)}: expected one of ${
        Object.keys(RESOURCE_TYPES).join(", ")
      }`,
    );
  }
  return type;
}

/** A request path parsed against the served resources. */
export interface ResourcePath {
  readonly type: ResourceType;
  /** Namespace from the path, or undefined for a cluster-wide request. */
  readonly namespace?: string;
  /** Object name from the path, or undefined for a collection. */
  readonly name?: string;
}

/**
 * Parses `/api/v1[/namespaces/NS]/RESOURCE[/NAME]` and
 * `/apis/GROUP/VERSION[/namespaces/NS]/RESOURCE[/NAME]`; undefined when nothing served matches.
 */
export function parseResourcePath(pathname: string): ResourcePath | undefined {
  const parts = pathname.split("/").filter((p) => p !== "").map(decodeURIComponent);
  let group: string;
  let version: string;
  let rest: string[];
  if (parts[0] === "api" && parts.length >= 3) {
    group = "";
    version = parts[1] ?? "";
    rest = parts.slice(2);
  } else if (parts[0] === "apis" && parts.length >= 4) {
    group = parts[1] ?? "";
    version = parts[2] ?? "";
    rest = parts.slice(3);
  } else {
    return undefined;
  }
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest.length >= 3) {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  if (rest.length < 1 || rest.length > 2) return undefined;
  const type = Object.values(RESOURCE_TYPES).find((t) =>
    t.resource === rest[0] && t.group === group && t.version === version
  );
  if (type === undefined) return undefined;
  if (namespace !== undefined && !type.namespaced) return undefined;
  return {
    type,
    ...(namespace !== undefined ? { namespace } : {}),
    ...(rest[1] !== undefined ? { name: rest[1] } : {}),
  };
}
