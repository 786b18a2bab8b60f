/** Shared fixtures of the test API server's own tests. */
import { createTestPki, startTestApiServer, type TestApiServer, type TestPki } from "./mod.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** One PKI for all of a test file's servers (made once per file). */
export const pki: TestPki = await createTestPki();
globalThis.addEventListener("unload", () => Deno.removeSync(pki.dir, { recursive: true }));

/** A minimal valid Service. */
export function svc(name: string, labels: Record<string, string> = {}, ns = "default"): Json {
  return {
    kind: "Service",
    metadata: { name, namespace: ns, labels },
    spec: { ports: [{ port: 80 }] },
  };
}

/** A Node with a zone, a pod CIDR and an InternalIP. */
export function node(name: string): Json {
  return {
    kind: "Node",
    metadata: { name, labels: { "topology.kubernetes.io/zone": "z1" } },
    spec: { podCIDRs: ["10.1.0.0/24"] },
    status: { addresses: [{ type: "InternalIP", address: "192.168.0.2" }] },
  };
}

/** Runs `fn` against a fresh server and always closes it. */
export async function withServer(
  fn: (s: TestApiServer) => Promise<void>,
  opts: { bookmarkIntervalMs?: number; historyLimit?: number; pageWatchCacheLists?: boolean } = {},
) {
  const s = await startTestApiServer({ pki, ...opts });
  try {
    await fn(s);
  } finally {
    await s.close();
  }
}
