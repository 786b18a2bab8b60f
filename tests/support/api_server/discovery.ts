/** Discovery documents (/api, /apis, /version, resource lists) for the served resources. */
import { apiVersionOf, RESOURCE_TYPES, type ResourceType } from "./resources.ts";

/** The version the test server claims to be. */
export const SERVER_VERSION = {
  major: "1",
  minor: "33",
  gitVersion: "v1.33.0-deno-kube-proxy-test",
  gitCommit: "0000000000000000000000000000000000000000",
  gitTreeState: "clean",
  buildDate: "2025-01-01T00:00:00Z",
  goVersion: "go1.24.0",
  compiler: "gc",
  platform: "linux/amd64",
};

function verbsOf(type: ResourceType): string[] {
  return type.kind === "Event"
    ? ["create", "delete", "get", "list", "patch", "update", "watch"]
    : ["create", "delete", "get", "list", "update", "watch"];
}

/** The JSON document for a discovery path, or undefined when the path is not discovery. */
export function discoveryDocument(pathname: string): unknown {
  const path = pathname.replace(/\/+$/, "");
  const types = Object.values(RESOURCE_TYPES);
  const groups = [...new Set(types.filter((t) => t.group !== "").map((t) => t.group))];
  if (path === "/version") return SERVER_VERSION;
  if (path === "/api") {
    return {
      kind: "APIVersions",
      versions: ["v1"],
      serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress: "127.0.0.1:6443" }],
    };
  }
  if (path === "/apis") {
    return {
      kind: "APIGroupList",
      apiVersion: "v1",
      groups: groups.map((g) => {
        const gv = { groupVersion: `${g}/v1`, version: "v1" };
        return { name: g, versions: [gv], preferredVersion: gv };
      }),
    };
  }
  const gv = path === "/api/v1" ? "v1" : /^\/apis\/([^/]+\/[^/]+)$/.exec(path)?.[1];
  const served = types.filter((t) => apiVersionOf(t) === gv);
  if (gv === undefined || served.length === 0) return undefined;
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: gv,
    resources: served.map((t) => ({
      name: t.resource,
      singularName: t.kind.toLowerCase(),
      namespaced: t.namespaced,
      kind: t.kind,
      verbs: verbsOf(t),
    })),
  };
}
