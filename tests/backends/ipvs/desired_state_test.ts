import assert from "node:assert/strict";
import {
  computeIpvsDesiredState,
  type IpvsDesiredState,
} from "../../../lib/backends/ipvs/_desired_state.ts";
import { ep, NODE_IP, port, state, svc } from "./fixtures.ts";

function realServers(d: IpvsDesiredState, vsKey: string): string[] {
  const vs = d.virtualServers.get(vsKey);
  assert.ok(vs, `no virtual server ${vsKey}`);
  return [...vs.realServers.keys()].sort();
}

function members(d: IpvsDesiredState, set: string): string[] {
  return [...(d.ipsets.get(set) ?? [])].sort();
}

Deno.test("computeIpvsDesiredState() makes a ClusterIP virtual server with weight-1 real servers, its set member and its bound address", () => {
  const d = computeIpvsDesiredState(
    state([port(svc(), [ep("10.0.1.1", 8080), ep("10.0.2.1", 8080)])]),
  );
  assert.deepEqual([...d.virtualServers.keys()], ["172.30.0.41:80/TCP"]);
  const vs = d.virtualServers.get("172.30.0.41:80/TCP")!;
  assert.equal(vs.vs.scheduler, "rr");
  assert.equal(vs.vs.persistentTimeout, 0);
  assert.deepEqual(realServers(d, "172.30.0.41:80/TCP"), ["10.0.1.1:8080", "10.0.2.1:8080"]);
  assert.ok([...vs.realServers.values()].every((r) => r.weight === 1));
  assert.deepEqual(members(d, "KUBE-CLUSTER-IP"), ["172.30.0.41,tcp:80"]);
  assert.deepEqual([...d.boundAddresses], ["172.30.0.41"]);
  assert.deepEqual(members(d, "KUBE-IPVS-IPS"), ["172.30.0.41"]);
  assert.equal(d.ipsets.size, 17);
});

Deno.test("computeIpvsDesiredState() keeps a virtual server with no endpoints, with no real server", () => {
  const d = computeIpvsDesiredState(state([port(svc())]));
  assert.deepEqual(realServers(d, "172.30.0.41:80/TCP"), []);
});

Deno.test("computeIpvsDesiredState() turns ClientIP affinity into persistence and mh into mh-port", () => {
  const d = computeIpvsDesiredState(state([port(svc({ stickyMaxAgeSeconds: 600 }))]), {
    scheduler: "mh",
  });
  const vs = d.virtualServers.get("172.30.0.41:80/TCP")!.vs;
  assert.equal(vs.persistentTimeout, 600);
  assert.equal(vs.scheduler, "mh");
  assert.deepEqual(vs.schedFlags, ["mh-port"]);
  assert.throws(
    () => computeIpvsDesiredState(state([]), { scheduler: "rr; rm -rf" }),
    /Invalid --ipvs-scheduler "rr; rm -rf"/,
  );
});

Deno.test("computeIpvsDesiredState() serves NodePorts on every node address but loopback, never bound", () => {
  const d = computeIpvsDesiredState(
    state([port(svc({ nodePort: 30080 }), [ep("10.0.1.1")])]),
    { nodeAddresses: [NODE_IP, "127.0.0.1", "10.1.0.1", "fd00::1"] },
  );
  assert.deepEqual([...d.virtualServers.keys()].sort(), [
    "10.1.0.1:30080/TCP",
    "172.30.0.41:80/TCP",
    "192.168.0.2:30080/TCP",
  ]);
  assert.deepEqual(members(d, "KUBE-NODE-PORT-TCP"), ["30080"]);
  assert.deepEqual([...d.boundAddresses], ["172.30.0.41"]);

  const only = computeIpvsDesiredState(
    state([port(svc({ nodePort: 30080 }))]),
    { nodeAddresses: [NODE_IP, "10.1.0.1"], nodePortAddresses: ["192.168.0.0/24"] },
  );
  assert.ok(only.virtualServers.has("192.168.0.2:30080/TCP"));
  assert.ok(!only.virtualServers.has("10.1.0.1:30080/TCP"));
});

Deno.test("computeIpvsDesiredState() puts SCTP NodePorts in the hash sets per node IP and ETP Local ones in the LOCAL sets", () => {
  const d = computeIpvsDesiredState(state([
    port(svc({ protocol: "SCTP", nodePort: 30090, externalPolicyLocal: true })),
    port(svc({ name: "svc2", clusterIP: "172.30.0.42", nodePort: 30091, protocol: "UDP" })),
  ]));
  assert.deepEqual(members(d, "KUBE-NODE-PORT-SCTP-HASH"), ["192.168.0.2,sctp:30090"]);
  assert.deepEqual(members(d, "KUBE-NODE-PORT-LOCAL-SCTP-HASH"), ["192.168.0.2,sctp:30090"]);
  assert.deepEqual(members(d, "KUBE-NODE-PORT-UDP"), ["30091"]);
  assert.deepEqual(members(d, "KUBE-NODE-PORT-LOCAL-UDP"), []);
});

Deno.test("computeIpvsDesiredState() binds externalIPs unless a node interface already holds them", () => {
  const d = computeIpvsDesiredState(
    state([
      port(svc({ externalIPs: ["198.51.100.7", NODE_IP] }), [ep("10.0.1.1")]),
      port(
        svc({
          name: "svc2",
          clusterIP: "172.30.0.42",
          externalIPs: ["198.51.100.8"],
          externalPolicyLocal: true,
        }),
      ),
    ]),
  );
  assert.ok(d.virtualServers.has("198.51.100.7:80/TCP"));
  assert.ok(d.virtualServers.has("192.168.0.2:80/TCP"));
  assert.deepEqual([...d.boundAddresses].sort(), [
    "172.30.0.41",
    "172.30.0.42",
    "198.51.100.7",
    "198.51.100.8",
  ]);
  assert.deepEqual(members(d, "KUBE-EXTERNAL-IP"), ["192.168.0.2,tcp:80", "198.51.100.7,tcp:80"]);
  assert.deepEqual(members(d, "KUBE-EXTERNAL-IP-LOCAL"), ["198.51.100.8,tcp:80"]);
});

Deno.test("computeIpvsDesiredState() fills the load balancer sets, source ranges and the no-node-access list", () => {
  const d = computeIpvsDesiredState(state([
    port(svc({
      loadBalancerIPs: ["203.0.114.1"],
      loadBalancerSourceRanges: ["203.0.113.0/24", "198.51.100.9/32"],
      externalPolicyLocal: true,
      nodePort: 30080,
    })),
    port(svc({
      name: "svc2",
      clusterIP: "172.30.0.42",
      loadBalancerIPs: ["203.0.114.2"],
      loadBalancerSourceRanges: ["192.168.0.0/24"],
      nodePort: 30081,
    })),
  ]));
  assert.deepEqual(members(d, "KUBE-LOAD-BALANCER"), ["203.0.114.1,tcp:80", "203.0.114.2,tcp:80"]);
  assert.deepEqual(members(d, "KUBE-LOAD-BALANCER-LOCAL"), ["203.0.114.1,tcp:80"]);
  assert.deepEqual(members(d, "KUBE-LOAD-BALANCER-FW"), [
    "203.0.114.1,tcp:80",
    "203.0.114.2,tcp:80",
  ]);
  assert.deepEqual(members(d, "KUBE-LOAD-BALANCER-SOURCE-CIDR"), [
    "203.0.114.1,tcp:80,198.51.100.9",
    "203.0.114.1,tcp:80,203.0.113.0/24",
    "203.0.114.2,tcp:80,192.168.0.0/24",
  ]);
  assert.deepEqual(members(d, "KUBE-LOAD-BALANCER-SOURCE-IP"), ["203.0.114.2,tcp:80,203.0.114.2"]);
  assert.deepEqual(d.lbNoNodeAccess, [{ ip: "203.0.114.1", protocol: "tcp", port: 80 }]);
  assert.deepEqual(members(d, "KUBE-NODE-PORT-LOCAL-TCP"), ["30080"]);
  assert.ok(d.boundAddresses.has("203.0.114.1"));
});

Deno.test("computeIpvsDesiredState() gives ETP Local entry points local endpoints, falling back to cluster ones", () => {
  const local = ep("10.0.1.1", 80, { isLocal: true });
  const remote = ep("10.0.2.1");
  const withLocal = computeIpvsDesiredState(state([
    port(svc({ nodePort: 30080, externalIPs: ["198.51.100.7"], externalPolicyLocal: true }), [
      local,
      remote,
    ]),
  ]));
  assert.deepEqual(realServers(withLocal, "172.30.0.41:80/TCP"), ["10.0.1.1:80", "10.0.2.1:80"]);
  assert.deepEqual(realServers(withLocal, "198.51.100.7:80/TCP"), ["10.0.1.1:80"]);
  assert.deepEqual(realServers(withLocal, "192.168.0.2:30080/TCP"), ["10.0.1.1:80"]);
  assert.deepEqual(members(withLocal, "KUBE-LOOP-BACK"), ["10.0.1.1,tcp:80,10.0.1.1"]);

  const noLocal = computeIpvsDesiredState(state([
    port(svc({ nodePort: 30080, externalPolicyLocal: true }), [remote]),
  ]));
  assert.deepEqual(realServers(noLocal, "192.168.0.2:30080/TCP"), ["10.0.2.1:80"]);
  assert.deepEqual(noLocal.noLocalEndpoints, { internal: 0, external: 1 });
});

Deno.test("computeIpvsDesiredState() gives an ITP Local ClusterIP its local endpoints, or none at all", () => {
  const local = ep("10.0.1.1", 80, { isLocal: true });
  const remote = ep("10.0.2.1");
  const d = computeIpvsDesiredState(state([
    port(svc({ internalPolicyLocal: true }), [local, remote]),
    port(svc({ name: "svc2", clusterIP: "172.30.0.42", internalPolicyLocal: true }), [remote]),
  ]));
  assert.deepEqual(realServers(d, "172.30.0.41:80/TCP"), ["10.0.1.1:80"]);
  assert.deepEqual(realServers(d, "172.30.0.42:80/TCP"), []);
  assert.deepEqual(d.noLocalEndpoints, { internal: 1, external: 0 });
});

Deno.test("computeIpvsDesiredState() adds health check node ports to their set", () => {
  const d = computeIpvsDesiredState(state([
    port(svc({ nodePort: 30080, externalPolicyLocal: true, healthCheckNodePort: 32000 })),
  ]));
  assert.deepEqual(members(d, "KUBE-HEALTH-CHECK-NODE-PORT"), ["32000"]);
});

Deno.test("computeIpvsDesiredState() spells IPv6 virtual servers, set names and members", () => {
  const d = computeIpvsDesiredState(
    state([port(svc({ clusterIP: "fd00:30::1", nodePort: 30080 }), [ep("fd00:10::5", 8080)])], {
      family: "IPv6",
    }),
  );
  assert.deepEqual([...d.virtualServers.keys()].sort(), [
    "[fd00:20::2]:30080/TCP",
    "[fd00:30::1]:80/TCP",
  ]);
  assert.deepEqual(realServers(d, "[fd00:30::1]:80/TCP"), ["[fd00:10::5]:8080"]);
  assert.deepEqual(members(d, "KUBE-CLUSTER-IP"), ["fd00:30::1,tcp:80"]);
});

Deno.test("computeIpvsDesiredState() skips and reports a service port with an untrusted value", () => {
  const d = computeIpvsDesiredState(state([
    port(svc({ externalIPs: ["1.2.3.4 -j ACCEPT"] })),
    port(svc({ name: "svc2", clusterIP: "172.30.0.42" }), [
      ep("10.0.0.1", 80, { ip: "10.0.0.1,udp:1" }),
    ]),
  ]));
  assert.equal(d.virtualServers.size, 0);
  assert.equal(d.skipped.length, 2);
  assert.ok([...d.ipsets.values()].every((s) => s.size === 0));
});
