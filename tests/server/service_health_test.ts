import assert from "node:assert/strict";
import { createProxyTracker, type IPFamily } from "../../lib/proxy/mod.ts";
import {
  bindableHealthCheckAddresses,
  healthCheckAddresses,
  serviceHealthTargets,
  unpermittedHealthCheckMessage,
} from "../../lib/server/mod.ts";
import { ALL_ADDRESSES, createServiceHealthHandler } from "../../lib/server/service_health.ts";

/** A LoadBalancer Service; `local` makes it externalTrafficPolicy Local with a health port. */
function lbService(name: string, local: boolean, healthCheckNodePort = 32000) {
  return {
    metadata: { namespace: "demo", name },
    spec: {
      type: "LoadBalancer",
      clusterIP: "172.30.0.20",
      clusterIPs: ["172.30.0.20"],
      ports: [
        { name: "http", port: 80, targetPort: 8080, protocol: "TCP", nodePort: 30080 },
        { name: "https", port: 443, targetPort: 8443, protocol: "TCP", nodePort: 30443 },
      ],
      externalTrafficPolicy: local ? "Local" : "Cluster",
      ...(local ? { healthCheckNodePort } : {}),
    },
  };
}

interface Ep {
  ip: string;
  node: string;
  ready?: boolean;
}

function slice(svc: string, eps: Ep[], family: IPFamily = "IPv4") {
  return {
    metadata: {
      namespace: "demo",
      name: `${svc}-${family.toLowerCase()}`,
      labels: { "kubernetes.io/service-name": svc },
    },
    addressType: family,
    ports: [{ name: "http", port: 8080, protocol: "TCP" }, {
      name: "https",
      port: 8443,
      protocol: "TCP",
    }],
    endpoints: eps.map((e) => ({
      addresses: [e.ip],
      conditions: {
        ready: e.ready ?? true,
        serving: true,
        terminating: !(e.ready ?? true),
      },
      nodeName: e.node,
    })),
  };
}

/** The targets for these objects, through the real tracker. */
function targetsFor(objects: { services: unknown[]; slices: unknown[] }) {
  const tracker = createProxyTracker({
    nodeName: "node1",
    fallbackNodeIPs: ["192.168.0.2"],
    onInvalid: (kind, key, reason) => {
      throw new Error(`${kind} ${key}: ${reason}`);
    },
  });
  for (const object of objects.services) {
    tracker.handleEvent({ kind: "Service", type: "ADDED", object } as never);
  }
  for (const object of objects.slices) {
    tracker.handleEvent({ kind: "EndpointSlice", type: "ADDED", object } as never);
  }
  tracker.markSynced("Service");
  tracker.markSynced("EndpointSlice");
  return serviceHealthTargets([tracker.snapshot("IPv4"), tracker.snapshot("IPv6")]);
}

Deno.test("serviceHealthTargets() counts each local ready endpoint IP once across ports", () => {
  const targets = targetsFor({
    services: [lbService("web", true)],
    slices: [slice("web", [
      { ip: "10.0.1.2", node: "node1" },
      { ip: "10.0.1.3", node: "node1" },
      { ip: "10.0.2.2", node: "node2" },
      { ip: "10.0.1.4", node: "node1", ready: false },
    ])],
  });
  assert.deepEqual([...targets.values()], [
    { namespace: "demo", name: "web", port: 32000, localEndpoints: 2 },
  ]);
});

Deno.test("serviceHealthTargets() wants servers for ETP Local load balancers only", () => {
  const targets = targetsFor({
    services: [lbService("local-none", true, 32001), lbService("cluster", false)],
    slices: [slice("cluster", [{ ip: "10.0.1.2", node: "node1" }])],
  });
  assert.deepEqual([...targets.keys()], ["demo/local-none"]);
  assert.equal(targets.get("demo/local-none")?.localEndpoints, 0);
});

Deno.test("healthCheckAddresses() listens everywhere unless nodePortAddresses narrows it", () => {
  const ips = ["192.168.0.2", "fd00:192::2"];
  assert.deepEqual(healthCheckAddresses([], ips), [ALL_ADDRESSES]);
  assert.deepEqual(healthCheckAddresses(["0.0.0.0/0"], ips), [ALL_ADDRESSES]);
  assert.deepEqual(healthCheckAddresses(["192.168.0.0/24"], ips), ["192.168.0.2"]);
  assert.deepEqual(healthCheckAddresses(["primary"], ips), ips);
  assert.deepEqual(healthCheckAddresses(["10.9.0.0/16"], ips), [ALL_ADDRESSES]);
});

Deno.test("createServiceHealthHandler() answers 200 with local endpoints and a healthy proxy", async () => {
  const handler = createServiceHealthHandler(
    { namespace: "demo", name: "web" },
    () => ({ localEndpoints: 2, healthy: true }),
  );
  const res = handler(new Request("http://192.168.0.2:32000/"));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("Content-Type"), "application/json");
  assert.equal(res.headers.get("X-Content-Type-Options"), "nosniff");
  assert.equal(res.headers.get("X-Load-Balancing-Endpoint-Weight"), "2");
  assert.deepEqual(await res.json(), {
    service: { namespace: "demo", name: "web" },
    localEndpoints: 2,
    serviceProxyHealthy: true,
  });
});

Deno.test("createServiceHealthHandler() answers 503 without local endpoints or when unhealthy", async () => {
  const status = { localEndpoints: 0, healthy: true };
  const handler = createServiceHealthHandler({ namespace: "demo", name: "web" }, () => status);
  const none = handler(new Request("http://x/healthz"));
  assert.equal(none.status, 503);
  assert.equal(none.headers.get("X-Load-Balancing-Endpoint-Weight"), "0");
  assert.equal((await none.json()).localEndpoints, 0);
  status.localEndpoints = 3;
  status.healthy = false;
  const sick = handler(new Request("http://x/"));
  assert.equal(sick.status, 503);
  assert.equal((await sick.json()).serviceProxyHealthy, false);
});

Deno.test("bindableHealthCheckAddresses() binds the permitted node IPs and reports the others", () => {
  const allowed = new Set(["192.168.0.2"]);
  const canBind = (ip: string) => allowed.has(ip);
  assert.deepEqual(bindableHealthCheckAddresses(["192.168.0.2"], canBind), {
    addresses: ["192.168.0.2"],
    unpermitted: [],
  });
  // One family permitted: only it is bound, never the wildcard.
  assert.deepEqual(bindableHealthCheckAddresses(["192.168.0.2", "fd00::2"], canBind), {
    addresses: ["192.168.0.2"],
    unpermitted: ["fd00::2"],
  });
  // None permitted: every address, and the caller is told which IPs were missing.
  assert.deepEqual(bindableHealthCheckAddresses(["192.168.0.3"], canBind), {
    addresses: [ALL_ADDRESSES],
    unpermitted: ["192.168.0.3"],
  });
  assert.deepEqual(bindableHealthCheckAddresses([ALL_ADDRESSES], () => false), {
    addresses: [ALL_ADDRESSES],
    unpermitted: [],
  });
});

Deno.test("unpermittedHealthCheckMessage() names the IPs, where it listens and the fix", () => {
  const msg = unpermittedHealthCheckMessage(["192.168.0.2"], [ALL_ADDRESSES]);
  assert.match(msg, /"192\.168\.0\.2"/);
  assert.match(msg, /every address/);
  assert.match(msg, /"proxy" permission set's net list in deno\.json/);
  assert.match(msg, /deno task compile --api-server 192\.168\.0\.2/);
});
