/**
 * Public face of the test Kubernetes API server: TLS with a throwaway CA, token and client
 * certificate auth, list/watch of Services, EndpointSlices and Nodes, Event creation, and
 * fault injection (cut/stall streams, 410, 500, 429 + Retry-After, malformed lines, restarts).
 */
export * from "./auth.ts";
export * from "./certs.ts";
export type { FailOptions, RequestMatch, RequestRecord } from "./faults.ts";
export {
  type RestartOptions,
  startTestApiServer,
  TestApiServer,
  type TestApiServerOptions,
} from "./server.ts";
export { type KubeObject, ObjectStore, type StoreEvent, type WriteOptions } from "./store.ts";
export { failureStatus, type Status, StatusError } from "./status.ts";
export * from "./kubeconfig.ts";
export * from "./netns_bridge.ts";
export * from "./raw_client.ts";
