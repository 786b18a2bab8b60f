/**
 * Endpoint selection for one service port on this node, mirroring upstream's
 * CategorizeEndpoints (pkg/proxy/topology.go, v1.34): readiness with a serving-terminating
 * fallback, topology hints (same node, then same zone), and the Local traffic policies.
 */
import { usesClusterEndpoints, usesLocalEndpoints } from "./service_port.ts";
import type { CategorizedEndpoints, Endpoint, ServicePort } from "./types.ts";

/** The Node label giving this node's zone for zone hints. */
export const TOPOLOGY_ZONE_LABEL = "topology.kubernetes.io/zone";

type TopologyMode = "" | "PreferSameNode" | "PreferSameZone";

/** Settings of endpoint selection that come from feature gates. */
export interface TopologyOptions {
  /**
   * Same-node hints are honoured (feature gate PreferSameTrafficDistribution, on by default in
   * 1.34); when off, only zone hints are, as upstream.
   */
  readonly nodeHints?: boolean;
}

/**
 * Which hints apply: same-node when node hints are honoured, every ready endpoint has them and
 * one names this node, else same-zone under the same rule for zone hints, else none. Only ready
 * endpoints are considered.
 */
function topologyModeFromHints(
  endpoints: readonly Endpoint[],
  nodeName: string,
  zone: string,
  nodeHints: boolean,
): TopologyMode {
  let hasReady = false;
  let allNodeHints = true, forNode = false;
  let allZoneHints = true, forZone = false;
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    hasReady = true;
    if (ep.nodeHints.length === 0) allNodeHints = false;
    else if (ep.nodeHints.includes(nodeName)) forNode = true;
    if (ep.zoneHints.length === 0) allZoneHints = false;
    else if (ep.zoneHints.includes(zone)) forZone = true;
  }
  if (!hasReady) return "";
  if (nodeHints && allNodeHints && forNode) return "PreferSameNode";
  if (allZoneHints && forZone) return "PreferSameZone";
  return "";
}

function availableForTopology(
  ep: Endpoint,
  mode: TopologyMode,
  nodeName: string,
  zone: string,
): boolean {
  if (mode === "PreferSameNode") return ep.nodeHints.includes(nodeName);
  if (mode === "PreferSameZone") return ep.zoneHints.includes(zone);
  return true;
}

const servingTerminating = (ep: Endpoint) => ep.serving && ep.terminating;

/**
 * Splits a service port's endpoints into the Cluster-policy set and the Local-policy set for
 * this node. Where upstream returns nil for a set the service never uses, this returns an empty
 * array: check usesClusterEndpoints()/usesLocalEndpoints() to tell "unused" from "none usable".
 * allReachableEndpoints keeps the input (sorted) order; hasAnyEndpoints may be true while it is
 * empty (Local policy with only remote endpoints: DROP rather than REJECT).
 */
export function categorizeEndpoints(
  endpoints: readonly Endpoint[],
  svcInfo: ServicePort,
  nodeName: string,
  nodeLabels: Readonly<Record<string, string>>,
  options: TopologyOptions = {},
): CategorizedEndpoints {
  let clusterEndpoints: readonly Endpoint[] = [];
  let localEndpoints: readonly Endpoint[] = [];
  let hasAnyEndpoints = false;
  if (endpoints.length === 0) {
    return { clusterEndpoints, localEndpoints, allReachableEndpoints: [], hasAnyEndpoints };
  }

  const useCluster = usesClusterEndpoints(svcInfo);
  let mode: TopologyMode = "";
  if (useCluster) {
    const zone = nodeLabels[TOPOLOGY_ZONE_LABEL] ?? "";
    mode = topologyModeFromHints(endpoints, nodeName, zone, options.nodeHints ?? true);
    clusterEndpoints = endpoints.filter((ep) =>
      ep.ready && availableForTopology(ep, mode, nodeName, zone)
    );
    // Topology was already ignored if it left no ready endpoint, so none is ready anywhere.
    if (clusterEndpoints.length === 0) clusterEndpoints = endpoints.filter(servingTerminating);
    if (clusterEndpoints.length > 0) hasAnyEndpoints = true;
  }

  if (!usesLocalEndpoints(svcInfo)) {
    return {
      clusterEndpoints,
      localEndpoints,
      allReachableEndpoints: clusterEndpoints,
      hasAnyEndpoints,
    };
  }

  let localReady = false, localServingTerminating = false;
  for (const ep of endpoints) {
    if (ep.ready) {
      hasAnyEndpoints = true;
      if (ep.isLocal) localReady = true;
    } else if (servingTerminating(ep)) {
      hasAnyEndpoints = true;
      if (ep.isLocal) localServingTerminating = true;
    }
  }
  let usedTerminating = false;
  if (localReady) localEndpoints = endpoints.filter((ep) => ep.isLocal && ep.ready);
  else if (localServingTerminating) {
    usedTerminating = true;
    localEndpoints = endpoints.filter((ep) => ep.isLocal && servingTerminating(ep));
  }

  if (!useCluster) {
    return {
      clusterEndpoints,
      localEndpoints,
      allReachableEndpoints: localEndpoints,
      hasAnyEndpoints,
    };
  }
  if (mode === "" && !usedTerminating) {
    // Every ready endpoint is in the cluster set, so it contains the (ready) local set.
    return {
      clusterEndpoints,
      localEndpoints,
      allReachableEndpoints: clusterEndpoints,
      hasAnyEndpoints,
    };
  }
  const reachable = new Set<Endpoint>([...clusterEndpoints, ...localEndpoints]);
  const allReachableEndpoints = endpoints.filter((ep) => reachable.has(ep));
  return { clusterEndpoints, localEndpoints, allReachableEndpoints, hasAnyEndpoints };
}
