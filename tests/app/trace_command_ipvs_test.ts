/**
 * traceCommand in IPVS mode over a node of stateful fakes (ip, ipset, ipvsadm, iptables)
 * programmed by the real IPVS proxier: the kernel keeps no service names, so trace attaches
 * the cluster state's; the live rules then agree (exit 0) until a real server is removed from
 * the fake kernel behind the proxy's back (exit 3).
 * IP plan: pods 10.0.0.0/8, service IPs 172.30.0.0/16, node 192.168.0.2.
 */
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { traceCommand } from "../../lib/app/trace_command.ts";
import { createIpvsProxier } from "../../lib/backends/ipvs/proxier.ts";
import { ipvsModeOptions } from "../../lib/backends/ipvs/ipvs_options.ts";
import { defaultConfig, type TraceRequest } from "../../lib/config/mod.ts";
import type { CommandRunner } from "../../lib/exec/mod.ts";
import { createLogger } from "../../lib/log/mod.ts";
import type { ProxyState } from "../../lib/proxy/mod.ts";
import { ep, NODE_IP, port, state, svc } from "../backends/ipvs/fixtures.ts";
import { createFakeIpAddr } from "../support/fake_ip_addr.ts";
import { createFakeIpset } from "../support/fake_ipset.ts";
import { createFakeIptables } from "../support/fake_iptables.ts";
import { createFakeIpvsadm } from "../support/fake_ipvsadm.ts";

const logger = createLogger({ format: "text", verbosity: 0, write: () => {} });
const config = {
  ...defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }),
  hostnameOverride: "node1",
  clusterCIDRs: ["10.0.0.0/8"],
  mode: "ipvs" as const,
};
const web = svc({
  namespace: "default",
  name: "web",
  portName: "http",
  clusterIP: "172.30.0.10",
  nodePort: 30080,
});
const cluster: ProxyState = state([port(web, [ep("10.0.1.2", 8080), ep("10.0.2.2", 8080)])]);
const request: TraceRequest = {
  family: "IPv4",
  from: "10.0.0.5",
  to: "172.30.0.10",
  port: 80,
  protocol: "tcp",
  source: "pod",
  output: "text",
  rendered: false,
};

/** A node whose fake kernel the real IPVS proxier has programmed for `cluster`. */
async function programmedNode() {
  const ip = createFakeIpAddr();
  const ipset = createFakeIpset();
  const ipvs = createFakeIpvsadm();
  const ipt = createFakeIptables({ missing: ["legacy"] });
  const run: CommandRunner = (input) => {
    if (input.cmd === "ip") return ip.run(input);
    if (input.cmd === "ipset") return ipset.run(input);
    if (input.cmd === "ipvsadm") return ipvs.run(input);
    return ipt.run(input);
  };
  const proxier = createIpvsProxier({
    ...ipvsModeOptions(config, "IPv4"),
    family: "IPv4",
    runner: run,
  });
  await proxier.sync(cluster);
  return { ipvs, run };
}

function trace(run: CommandRunner, r: Partial<TraceRequest> = {}) {
  return traceCommand(config, { ...request, ...r }, {
    runner: run,
    logger,
    listLocalAddresses: () => Promise.resolve([NODE_IP, "127.0.0.1"]),
    loadState: () => Promise.resolve(cluster),
  });
}

Deno.test("traceCommand() in IPVS mode names the service of live virtual servers and agrees", async () => {
  const { run } = await programmedNode();
  const out = await trace(run);
  assert.equal(out.code, 0, out.text);
  assert.match(out.text, /rules: +ipvs rules read from the kernel/);
  assert.match(out.text, /decision: forward default\/web:http to 2 endpoint\(s\)/);
  assert.match(out.text, /virtual-server\[172\.30\.0\.10:80\/TCP rr\]/);
  const nodePort = await trace(run, { from: "203.0.113.2", to: NODE_IP, port: 30080 });
  assert.equal(nodePort.code, 0, nodePort.text);
  assert.match(nodePort.text, /decision: forward default\/web:http/);
});

Deno.test("traceCommand() in IPVS mode exits 3 when the kernel lost a real server", async () => {
  const { ipvs, run } = await programmedNode();
  const removed = await ipvs.run({
    cmd: "ipvsadm",
    args: ["-d", "-t", "172.30.0.10:80", "-r", "10.0.1.2:8080"],
  });
  assert.equal(removed.code, 0, removed.stderr);
  const out = await trace(run, { output: "json" });
  assert.equal(out.code, 3);
  const json = JSON.parse(out.text);
  assert.equal(json.agree, false);
  assert.equal(json.decision.servicePort, "default/web:http");
  assert.deepEqual(json.decision.endpoints, [{ address: "10.0.2.2:8080", probability: 1 }]);
  assert.equal(json.expected.endpoints.length, 2);
  assert.ok(json.differences.some((d: string) => d.includes("10.0.1.2:8080")), json.differences);
});
