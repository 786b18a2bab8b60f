/**
 * What kube-proxy lists and watches: Services and EndpointSlices with upstream's label selector,
 * its own Node by name, and
 * the ServiceCIDRs when the server has them. Query builders for list and watch requests live here too.
 */
import { HEADLESS_LABEL, type ObjectKind, SERVICE_PROXY_NAME_LABEL } from "../source/mod.ts";

/** One watched collection. */
export interface ResourceSpec {
  readonly kind: ObjectKind;
  /** Collection path across all namespaces, e.g. "/api/v1/services". */
  readonly path: string;
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  /**
   * The kind may not be served (an older or locked-down API server): a 404 or 403 on its first
   * list is logged once and treated as an empty, synced collection.
   */
  readonly optional?: boolean;
}

/** Upstream's `!service.kubernetes.io/service-proxy-name,!service.kubernetes.io/headless`. */
export const PROXY_LABEL_SELECTOR = `!${SERVICE_PROXY_NAME_LABEL},!${HEADLESS_LABEL}`;

/** The field selector that picks one Node. */
export function nodeFieldSelector(nodeName: string): string {
  return `metadata.name=${nodeName}`;
}

/** The cluster-scoped ServiceCIDRs (MultiCIDRServiceAllocator, GA in 1.33). */
export const SERVICE_CIDRS_PATH = "/apis/networking.k8s.io/v1/servicecidrs";

/** The collections kube-proxy watches, for node `nodeName`. */
export function proxyResources(nodeName: string): readonly ResourceSpec[] {
  return [
    { kind: "Service", path: "/api/v1/services", labelSelector: PROXY_LABEL_SELECTOR },
    {
      kind: "EndpointSlice",
      path: "/apis/discovery.k8s.io/v1/endpointslices",
      labelSelector: PROXY_LABEL_SELECTOR,
    },
    { kind: "Node", path: "/api/v1/nodes", fieldSelector: nodeFieldSelector(nodeName) },
    { kind: "ServiceCIDR", path: SERVICE_CIDRS_PATH, optional: true },
  ];
}

function selectors(resource: ResourceSpec): Record<string, string> {
  const q: Record<string, string> = {};
  if (resource.labelSelector) q.labelSelector = resource.labelSelector;
  if (resource.fieldSelector) q.fieldSelector = resource.fieldSelector;
  return q;
}

/** What one list page asks for. */
export interface ListPageOptions {
  /** Objects per page; 0 asks for everything in one answer. */
  readonly limit: number;
  /** The previous page's continue token; "" for the first page. */
  readonly continueToken: string;
  /**
   * Sent on the first page only (the API server rejects it next to a continue token): "0" lets
   * the server answer from its watch cache, "" asks for a consistent read, another value for
   * state no older than it.
   */
  readonly resourceVersion: string;
}

/** Query of one list page: the selectors, a page size, and the continue token or RV. */
export function listQuery(resource: ResourceSpec, page: ListPageOptions): Record<string, string> {
  const q = selectors(resource);
  if (page.limit > 0) q.limit = String(page.limit);
  if (page.continueToken !== "") q.continue = page.continueToken;
  else if (page.resourceVersion !== "") q.resourceVersion = page.resourceVersion;
  return q;
}

/** Query of a watch from `resourceVersion`, with bookmarks and a server-side timeout. */
export function watchQuery(
  resource: ResourceSpec,
  resourceVersion: string,
  timeoutSeconds: number,
): Record<string, string> {
  return {
    ...selectors(resource),
    watch: "true",
    resourceVersion,
    allowWatchBookmarks: "true",
    timeoutSeconds: String(timeoutSeconds),
  };
}

/**
 * Upstream picks each watch's server-side timeout at random between the minimum and twice it
 * (5-10 minutes), so that watches do not all end together.
 */
export function watchTimeoutSeconds(minSeconds: number, random: () => number): number {
  return Math.floor(minSeconds * (1 + random()));
}
