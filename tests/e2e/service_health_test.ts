/**
 * The per-service health check server of an externalTrafficPolicy Local load balancer, probed
 * with real HTTP from the external client's namespace (as a cloud load balancer does) while
 * the service's local endpoints come and go.
 */
import assert from "node:assert/strict";
import { list, node1 } from "./support/cluster_objects.ts";
import { flowService, flowSlice, local, remote } from "./support/flow_objects.ts";
import { eventually } from "./support/proxy_process.ts";
import { withProxy } from "./support/with_proxy.ts";
import type { Topology } from "../../scripts/netns/mod.ts";

const HEALTH_PORT = 32100;
const PORTS = [{ name: "http", port: 80, targetPort: 8080, nodePort: 30100 }];

function lbLocal() {
  const svc = flowService("demo", "lb", "172.30.0.50", PORTS, {
    type: "LoadBalancer",
    externalTrafficPolicy: "Local",
    loadBalancerIPs: ["198.51.100.50"],
  });
  return { ...svc, spec: { ...svc.spec, healthCheckNodePort: HEALTH_PORT } };
}

function state(endpoints: Parameters<typeof flowSlice>[3]) {
  return list([node1(), lbLocal(), flowSlice("demo", "lb", "lb-1", endpoints, PORTS)]);
}

interface Probe {
  /** curl's exit code: 0 answered, 7 connection refused. */
  readonly curl: number;
  readonly status: number;
  readonly weight: string | null;
  readonly body: Record<string, unknown> | null;
}

/** GET http://192.168.0.2:HEALTH_PORT/ from the external client. */
async function probe(topo: Topology): Promise<Probe> {
  const out = await topo.exec("external", "curl", [
    "-s",
    "-D",
    "-",
    "--max-time",
    "3",
    `http://192.168.0.2:${HEALTH_PORT}/`,
  ]);
  if (out.code !== 0) return { curl: out.code, status: 0, weight: null, body: null };
  const [head = "", body = ""] = out.stdout.split("\r\n\r\n");
  const status = Number(/^HTTP\/\S+ (\d+)/.exec(head)?.[1]);
  const weight = /^x-load-balancing-endpoint-weight: (\S+)/im.exec(head)?.[1] ?? null;
  assert.match(head, /^content-type: application\/json/im);
  assert.match(head, /^x-content-type-options: nosniff/im);
  return { curl: 0, status, weight, body: JSON.parse(body) };
}

async function until(topo: Topology, what: string, want: (p: Probe) => boolean): Promise<Probe> {
  let last: Probe | undefined;
  await eventually(what, 10_000, async () => want(last = await probe(topo)));
  return last!;
}

Deno.test("e2e: the service health check server follows the local endpoints", async () => {
  await withProxy({
    prefix: "hmsvch",
    ipv6: false,
    pods: [{ name: "pa", ip: "10.0.1.2" }],
    remotePods: [{ name: "pb", ip: "10.0.2.2" }],
    echo: false,
    state: state([local("10.0.1.2"), remote("10.0.2.2")]),
  }, async ({ topo, dir }) => {
    const one = await until(topo, "200 with one local endpoint", (p) => p.status === 200);
    assert.equal(one.weight, "1");
    assert.deepEqual(one.body, {
      service: { namespace: "demo", name: "lb" },
      localEndpoints: 1,
      serviceProxyHealthy: true,
    });

    // The local pod goes away: the load balancer must stop sending traffic to this node.
    await dir.write("cluster.json", state([remote("10.0.2.2")]));
    const none = await until(topo, "503 without local endpoints", (p) => p.status === 503);
    assert.equal(none.weight, "0");
    assert.equal(none.body?.localEndpoints, 0);
    assert.equal(none.body?.serviceProxyHealthy, true);

    // Two local pods (one pod IP serving twice would count once).
    await dir.write("cluster.json", state([local("10.0.1.2"), local("10.0.1.3")]));
    const two = await until(topo, "200 with two local endpoints", (p) => p.weight === "2");
    assert.equal(two.status, 200);

    // The service is deleted: its health check port closes.
    await dir.write("cluster.json", list([node1()]));
    await until(topo, "connection refused once the service is gone", (p) => p.curl === 7);
  });
});
