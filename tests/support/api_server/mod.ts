/**
 * Public face of the test Kubernetes API server: TLS with a throwaway CA, token and client
 * certificate auth, list/watch of Services, EndpointSlices and Nodes, Event creation, and
 * fault injection (cut/stall streams, 410, 500, 429 + Retry-After, malformed lines, restarts).
 *
 * Usage: `const api = await startTestApiServer({ bookmarkIntervalMs: 500 })`, then
 * `api.create(obj)` / `api.update(obj)` / `api.delete(kind, ns, name)` (watches see the change),
 * `writeKubeconfig({ dir, server: api.url, pki: api.pki })` for the client, and in a network
 * namespace `exposeInNamespace({ namespace, serverPort: api.port, dir })` + server
 * "https://127.0.0.1:6443". Always `await api.close()`.
 *
 * Client certificates: Deno.serve and Deno.listenTls cannot ask for one, but node:https's
 * createServer({ requestCert: true, ca, rejectUnauthorized: false }) can in Deno 2.9.6 and
 * exposes the verified peer through socket.authorized / getPeerCertificate(), so the CN is the
 * user (as kube-apiserver does; an untrusted certificate is 401, not a handshake failure). A
 * socat OPENSSL-LISTEN verify=1 front was the alternative, but it hides which certificate was
 * used and fails untrusted ones at the handshake instead of with a 401 Status.
 */
export * from "./auth.ts";
export * from "./certs.ts";
export type { CapturedAnswer, FailOptions, RequestMatch, RequestRecord } from "./faults.ts";
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
