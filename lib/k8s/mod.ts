/** Public face of lib/k8s: the API-server client, its list+watch loops and the API source. */
export { createApiSource } from "./api_source.ts";
export { type KubeConfigChoice, loadKubeConfig, serverHost } from "./client_config.ts";
export { createTokenBucket } from "./rate_limiter.ts";
export { createReflector, type ReflectorStats } from "./reflector.ts";
export { proxyResources } from "./resources.ts";
export { createKubeTransport, resolveCredentials } from "./transport.ts";
export { type KubeObject } from "./watch_lines.ts";
export { PROTOBUF_MEDIA_TYPE } from "./_protobuf_meta.ts";
