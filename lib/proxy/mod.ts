/** Public face of lib/proxy: the data model, change trackers and endpoint selection. */
export { type IPFamily } from "../net/mod.ts";
export { type NodeStatus } from "./node_status.ts";
export {
  createProxyTracker,
  type ProxyTracker,
  type ProxyTrackerOptions,
} from "./proxy_tracker.ts";
export { externallyAccessible, usesClusterEndpoints, usesLocalEndpoints } from "./service_port.ts";
export { categorizeEndpoints, TOPOLOGY_ZONE_LABEL } from "./topology.ts";
export {
  type Endpoint,
  type Protocol,
  type ProxyState,
  type ServicePort,
  servicePortKey,
  servicePortNameString,
  type ServicePortState,
} from "./types.ts";
export { validateEndpointSlice } from "./validate_endpoint_slice.ts";
export { validateService } from "./validate_service.ts";
export { type SkippedServicePort, untrustedValue, validPort } from "./untrusted_value.ts";
