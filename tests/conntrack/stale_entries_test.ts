/**
 * The reconciler's decision, on the cases of upstream's cleanup_test.go re-expressed over our
 * ProxyState: one service with TCP, UDP and SCTP ports on a ClusterIP, an external IP and an LB
 * IP, a serving, a non-serving and a deleted endpoint, and flows to service and non-service ports.
 */
import assert from "node:assert/strict";
import {
  deleteFilterLines,
  reconciledProtocols,
  reconcileNeeded,
  staleConntrackEntries,
} from "../../lib/conntrack/_stale_entries.ts";
import { type ConntrackEntry } from "../../lib/conntrack/conntrack_entry.ts";
import type { Protocol } from "../../lib/proxy/mod.ts";
import { ep, NODE_IP, sps, state, svc } from "../backends/iptables/state_fixtures.ts";

const CLUSTER_IP = "172.30.1.1", EXTERNAL_IP = "192.168.99.100", LB_IP = "1.2.3.4";
const SERVING = "10.240.0.4", NOT_SERVING = "10.240.1.5", DELETED = "10.240.2.6";
const SVC_PORT = 8000, NODE_PORT = 32000, EP_PORT = 9090, OLD_EP_PORT = 8080, OTHER_PORT = 3000;
const FRONTS = [CLUSTER_IP, LB_IP, EXTERNAL_IP];

function port(protocol: Protocol, endpoints = [
  ep(SERVING, EP_PORT),
  ep(NOT_SERVING, EP_PORT, { ready: false, serving: false }),
]) {
  return sps(
    svc({
      name: "cleanup-test",
      portName: protocol.toLowerCase(),
      protocol,
      clusterIP: CLUSTER_IP,
      port: SVC_PORT,
      nodePort: protocol === "TCP" ? 0 : NODE_PORT,
      externalIPs: [EXTERNAL_IP],
      loadBalancerIPs: [LB_IP],
    }),
    endpoints,
  );
}

let n = 0;
function flow(
  protocol: Protocol,
  origDst: string,
  origDport: number,
  replySrc: string,
  replySport: number,
): ConntrackEntry {
  n++;
  return {
    protocol,
    origSrc: `10.0.${n >> 8}.${n & 255}`,
    origDst,
    origSport: 40000 + n,
    origDport,
    replySrc,
    replySport,
    unreplied: false,
  };
}

Deno.test("staleConntrackEntries() deletes UDP/SCTP flows not going to a serving endpoint, as upstream's cleanup test expects", () => {
  const s = state([port("TCP"), port("UDP"), port("SCTP")]);
  const all: ConntrackEntry[] = [], want: ConntrackEntry[] = [];
  // The endpoint kept its IP but changed its port: the flows to the old port are stale.
  for (const dst of FRONTS) {
    const e = flow("UDP", dst, SVC_PORT, SERVING, OLD_EP_PORT);
    all.push(e);
    want.push(e);
  }
  for (const target of [SERVING, NOT_SERVING, DELETED]) {
    for (const proto of ["TCP", "UDP", "SCTP"] as const) {
      for (const dst of FRONTS) {
        for (const p of [SVC_PORT, OTHER_PORT]) {
          const e = flow(proto, dst, p, target, EP_PORT);
          all.push(e);
          if (proto !== "TCP" && p === SVC_PORT && target !== SERVING) want.push(e);
        }
      }
      const np = flow(proto, NODE_IP, NODE_PORT, target, EP_PORT);
      all.push(np);
      if (proto !== "TCP" && target !== SERVING) want.push(np);
    }
  }
  // Flows made while no rule caught them were never DNATed: stale on a service port only.
  for (const dst of FRONTS) {
    for (const p of [SVC_PORT, OTHER_PORT]) {
      const e = flow("UDP", dst, p, dst, p);
      all.push(e);
      if (p === SVC_PORT) want.push(e);
    }
  }
  assert.equal(all.length, 3 + 63 + 6);
  assert.deepEqual(staleConntrackEntries(all, s), want);
  // Upstream reconciles UDP only; we also reconcile SCTP (its associations get pinned the same
  // way). Restricted to UDP, the decision is upstream's exactly: the old-port flows, the
  // non-serving and deleted endpoint's flows on three addresses and the NodePort, and the
  // never-DNATed flows on the service port.
  assert.equal(want.filter((e) => e.protocol === "UDP").length, 3 + 2 * 4 + 3);
});

Deno.test("staleConntrackEntries() deletes every flow of a service without serving endpoints (kubernetes/kubernetes#139628)", () => {
  const s = state([port("UDP", [ep(NOT_SERVING, EP_PORT, { ready: false, serving: false })])]);
  const flows = [
    flow("UDP", CLUSTER_IP, SVC_PORT, DELETED, EP_PORT),
    { ...flow("UDP", CLUSTER_IP, SVC_PORT, CLUSTER_IP, SVC_PORT), unreplied: true },
    flow("UDP", NODE_IP, NODE_PORT, DELETED, EP_PORT),
  ];
  assert.deepEqual(staleConntrackEntries(flows, s), flows);
  assert.deepEqual(staleConntrackEntries(flows, state([port("UDP", [])])), flows);
});

Deno.test("staleConntrackEntries() keeps flows to serving endpoints, terminating ones included: a restart deletes nothing", () => {
  const s = state([port("UDP", [
    ep(SERVING, EP_PORT),
    ep(NOT_SERVING, EP_PORT, { ready: false, serving: true, terminating: true }),
  ])]);
  const flows = [
    flow("UDP", CLUSTER_IP, SVC_PORT, SERVING, EP_PORT),
    flow("UDP", EXTERNAL_IP, SVC_PORT, NOT_SERVING, EP_PORT),
    flow("UDP", NODE_IP, NODE_PORT, SERVING, EP_PORT),
  ];
  assert.deepEqual(staleConntrackEntries(flows, s), []);
});

Deno.test("staleConntrackEntries() ignores flows of other services' endpoints and of unknown frontends", () => {
  // upstream's TestServiceWithoutEndpoints: the slice belongs to another service, so the
  // service has no endpoint here; a flow to an address no service owns is never touched.
  const flows = [flow("UDP", "172.30.9.9", SVC_PORT, DELETED, EP_PORT)];
  assert.deepEqual(staleConntrackEntries(flows, state([port("UDP")])), []);
});

Deno.test("staleConntrackEntries() leaves an outgoing flow that merely uses a NodePort number", () => {
  const s = state([port("UDP")]);
  const out = flow("UDP", "203.0.113.2", NODE_PORT, "203.0.113.2", NODE_PORT);
  const undnatedToNode = flow("UDP", NODE_IP, NODE_PORT, NODE_IP, NODE_PORT);
  assert.deepEqual(staleConntrackEntries([out, undnatedToNode], s), [undnatedToNode]);
});

Deno.test("staleConntrackEntries() deletes the flows of a service deleted since the previous sync (kubernetes/kubernetes#141371)", () => {
  const prev = state([port("UDP")]);
  const flows = [
    flow("UDP", CLUSTER_IP, SVC_PORT, SERVING, EP_PORT),
    flow("UDP", NODE_IP, NODE_PORT, SERVING, EP_PORT),
  ];
  assert.deepEqual(staleConntrackEntries(flows, state([]), prev), flows);
  // A new service port that took over the same frontend decides instead.
  const renamed = sps({ ...port("UDP").info, name: { ...port("UDP").info.name, name: "other" } }, [
    ep(SERVING, EP_PORT),
  ]);
  assert.deepEqual(staleConntrackEntries(flows, state([renamed]), prev), []);
  assert.deepEqual(reconciledProtocols(state([]), prev), ["UDP"]);
  assert.deepEqual(reconciledProtocols(state([port("TCP")])), []);
});

Deno.test("staleConntrackEntries() compares IPv6 addresses in canonical form", () => {
  const v6 = sps(
    svc({ protocol: "UDP", clusterIP: "FD00:30:0::53", port: 53 }),
    [ep("fd00:10::1", 8080)],
  );
  const s = state([v6], { family: "IPv6" });
  const keep = flow("UDP", "fd00:30::53", 53, "fd00:10::1", 8080);
  const gone = flow("UDP", "fd00:30::53", 53, "fd00:10::2", 8080);
  assert.deepEqual(staleConntrackEntries([keep, gone], s), [gone]);
});

Deno.test("deleteFilterLines() names each stale (frontend, endpoint) pair once, exactly", () => {
  const a = flow("UDP", CLUSTER_IP, SVC_PORT, DELETED, EP_PORT);
  const b = flow("UDP", CLUSTER_IP, SVC_PORT, DELETED, EP_PORT);
  const c = flow("SCTP", NODE_IP, NODE_PORT, DELETED, EP_PORT);
  assert.deepEqual(deleteFilterLines("IPv4", [a, b, c]), [
    "-D -f ipv4 -p udp --orig-dst 172.30.1.1 --orig-port-dst 8000 --reply-src 10.240.2.6 --reply-port-src 9090",
    "-D -f ipv4 -p sctp --orig-dst 192.168.0.2 --orig-port-dst 32000 --reply-src 10.240.2.6 --reply-port-src 9090",
  ]);
  assert.match(deleteFilterLines("IPv6", [a])[0]!, /^-D -f ipv6 -p udp /);
});

Deno.test("reconcileNeeded() is true only when a UDP or SCTP service port changed, appeared or went", () => {
  const udp = port("UDP"), tcp = port("TCP");
  const before = state([udp, tcp]);
  assert.equal(reconcileNeeded(state([udp, port("TCP")]), before), false, "TCP changes only");
  assert.equal(reconcileNeeded(state([port("UDP"), tcp]), before), true, "a UDP port recomputed");
  assert.equal(reconcileNeeded(state([tcp]), before), true, "a UDP port deleted");
  assert.equal(
    reconcileNeeded(state([udp, tcp, port("SCTP")]), before),
    true,
    "an SCTP port added",
  );
});
