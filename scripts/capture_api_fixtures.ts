/**
 * Captures the answers tests/k8s/protobuf_lists_test.ts decodes: a real kube-apiserver's
 * Service and EndpointSlice lists of one namespace, once in JSON and once in protobuf, and
 * the protobuf Status of failed requests. It creates that namespace's objects first (every
 * field the proxy reads, in the forms the server accepts), then writes
 * tests/k8s/fixtures/api_answers/. Needs a kube-apiserver this token may write to:
 *
 *   deno run -A scripts/capture_api_fixtures.ts --server https://127.0.0.1:6443 \
 *     --token TOKEN --ca ca.crt [--namespace fixtures]
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  options: {
    server: { type: "string" },
    token: { type: "string" },
    ca: { type: "string" },
    namespace: { type: "string", default: "fixtures" },
    out: { type: "string", default: "tests/k8s/fixtures/api_answers" },
  },
});
if (!values.server || !values.token || !values.ca) {
  console.error("usage: --server URL --token TOKEN --ca CA_FILE [--namespace NS] [--out DIR]");
  Deno.exit(1);
}
const ns = values.namespace!;
const client = Deno.createHttpClient({ caCerts: [Deno.readTextFileSync(values.ca)] });
const PROTOBUF = "application/vnd.kubernetes.protobuf";

async function call(
  method: string,
  path: string,
  opts: { body?: unknown; accept?: string; contentType?: string; token?: string } = {},
): Promise<Response> {
  return await fetch(`${values.server}${path}`, {
    client,
    method,
    headers: {
      authorization: `Bearer ${opts.token ?? values.token}`,
      accept: opts.accept ?? "application/json",
      ...(opts.body !== undefined
        ? { "content-type": opts.contentType ?? "application/json" }
        : {}),
    },
    ...(opts.body !== undefined ? { body: JSON.stringify(opts.body) } : {}),
  });
}

/** Creates an object, replacing one left by an earlier run. */
async function create(path: string, name: string, body: unknown): Promise<void> {
  await (await call("DELETE", `${path}/${name}`)).body?.cancel();
  for (let tries = 0;; tries++) {
    const r = await call("POST", path, { body });
    const text = await r.text();
    if (r.ok) return;
    // A deletion may still be going on.
    if (r.status === 409 && tries < 50) {
      await new Promise((res) => setTimeout(res, 100));
      continue;
    }
    throw new Error(`POST ${path} ${name}: ${r.status} ${text}`);
  }
}

const svcPath = `/api/v1/namespaces/${ns}/services`;
const slicePath = `/apis/discovery.k8s.io/v1/namespaces/${ns}/endpointslices`;
const meta = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  namespace: ns,
  ...extra,
});

await (await call("POST", "/api/v1/namespaces", { body: { metadata: { name: ns } } })).body
  ?.cancel();

const services: [string, Record<string, unknown>][] = [
  ["basic", {
    ports: [
      { name: "http", port: 80, targetPort: 8080, protocol: "TCP" },
      { name: "dns", port: 53, targetPort: "dns", protocol: "UDP" },
      { name: "sctp", port: 9999, protocol: "SCTP" },
    ],
  }],
  ["one-port", { ports: [{ port: 443 }] }],
  ["node-port", {
    type: "NodePort",
    externalTrafficPolicy: "Local",
    internalTrafficPolicy: "Local",
    ports: [{ name: "web", port: 80, nodePort: 30080 }],
  }],
  ["load-balancer", {
    type: "LoadBalancer",
    externalTrafficPolicy: "Local",
    loadBalancerSourceRanges: ["203.0.113.0/24", "198.51.100.7/32"],
    ports: [{ name: "https", port: 443, protocol: "TCP" }, {
      name: "q",
      port: 443,
      protocol: "UDP",
    }],
  }],
  ["affinity", {
    sessionAffinity: "ClientIP",
    sessionAffinityConfig: { clientIP: { timeoutSeconds: 600 } },
    ports: [{ port: 80 }],
  }],
  ["affinity-default", { sessionAffinity: "ClientIP", ports: [{ port: 80 }] }],
  ["external-ips", { externalIPs: ["192.0.2.1", "192.0.2.2"], ports: [{ port: 8443 }] }],
  ["headless", { clusterIP: "None", ports: [{ port: 80 }] }],
  ["external-name", { type: "ExternalName", externalName: "db.example.com" }],
  ["no-ports-label", { ports: [{ port: 81 }] }],
];
for (const [name, spec] of services) {
  const labels = name === "no-ports-label"
    ? { app: "a-label-value-longer-than-twenty-four", "example.com/tier": "front" }
    : { app: name };
  const annotations = { "example.com/note": "héllo ✓ — non-ASCII text", "example.com/empty": "" };
  await create(svcPath, name, { metadata: meta(name, { labels, annotations }), spec });
}
// A load balancer's addresses are in its status.
{
  const r = await call("PATCH", `${svcPath}/load-balancer/status`, {
    body: {
      status: {
        loadBalancer: { ingress: [{ ip: "192.0.2.10" }, { hostname: "lb.example.com" }] },
      },
    },
    contentType: "application/merge-patch+json",
  });
  if (!r.ok) throw new Error(`status patch: ${r.status} ${await r.text()}`);
  await r.body?.cancel();
}

const serviceLabel = (svc: string) => ({ "kubernetes.io/service-name": svc });
const slices: [string, Record<string, unknown>][] = [
  ["basic-v4", {
    metadata: meta("basic-v4", {
      labels: serviceLabel("basic"),
      annotations: { "endpoints.kubernetes.io/last-change-trigger-time": "2026-11-29T10:00:00Z" },
    }),
    addressType: "IPv4",
    ports: [
      { name: "http", port: 8080, protocol: "TCP" },
      { name: "dns", port: 53, protocol: "UDP", appProtocol: "dns" },
      { name: "sctp", port: 9999, protocol: "SCTP" },
    ],
    endpoints: [
      {
        addresses: ["10.1.0.1"],
        conditions: { ready: true, serving: true, terminating: false },
        nodeName: "node-a",
        zone: "zone-1",
        hints: { forZones: [{ name: "zone-1" }, { name: "zone-2" }] },
        targetRef: {
          kind: "Pod",
          namespace: ns,
          name: "pod-1",
          uid: "1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        },
      },
      {
        addresses: ["10.1.0.2", "10.1.0.3"],
        conditions: { ready: false, serving: true, terminating: true },
        nodeName: "node-b",
        zone: "zone-2",
        hostname: "pod-2",
      },
      { addresses: ["10.1.0.4"], conditions: { ready: false } },
      { addresses: ["10.1.0.5"] },
    ],
  }],
  ["basic-v6", {
    metadata: meta("basic-v6", { labels: serviceLabel("basic") }),
    addressType: "IPv6",
    ports: [{ name: "http", port: 8080 }],
    endpoints: [{ addresses: ["2001:db8::1"], conditions: { ready: true }, nodeName: "node-a" }],
  }],
  ["one-port-unnamed", {
    metadata: meta("one-port-unnamed", { labels: serviceLabel("one-port") }),
    addressType: "IPv4",
    ports: [{ port: 443 }, { name: "no-number" }],
    endpoints: [{ addresses: ["10.1.1.1"], conditions: { ready: true, serving: false } }],
  }],
  ["fqdn", {
    metadata: meta("fqdn", { labels: serviceLabel("external-name") }),
    addressType: "FQDN",
    ports: [{ port: 5432 }],
    endpoints: [{ addresses: ["db.example.com"] }],
  }],
  ["empty", {
    metadata: meta("empty", { labels: serviceLabel("node-port") }),
    addressType: "IPv4",
    endpoints: [],
  }],
];
for (const [name, body] of slices) await create(slicePath, name, body);

await Deno.mkdir(values.out!, { recursive: true });
async function save(file: string, r: Response): Promise<void> {
  const bytes = new Uint8Array(await r.arrayBuffer());
  await Deno.writeFile(`${values.out}/${file}`, bytes);
  console.log(file, r.status, r.headers.get("content-type"), bytes.length);
}
for (const [file, path] of [["services", svcPath], ["endpointslices", slicePath]] as const) {
  // Both are consistent reads with nothing written between: the same objects, the same
  // resourceVersion (the test checks it).
  await Deno.writeTextFile(`${values.out}/${file}.json`, await (await call("GET", path)).text());
  await save(`${file}.pb`, await call("GET", path, { accept: PROTOBUF }));
}
await save("status-404.pb", await call("GET", `${svcPath}/missing`, { accept: PROTOBUF }));
await save("status-401.pb", await call("GET", svcPath, { accept: PROTOBUF, token: "wrong" }));
await save(
  "status-rv-too-large.pb",
  await call("GET", `${svcPath}?resourceVersion=999999999&resourceVersionMatch=NotOlderThan`, {
    accept: PROTOBUF,
  }),
);
