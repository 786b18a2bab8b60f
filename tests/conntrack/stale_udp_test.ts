import assert from "node:assert/strict";
import { conntrackDeleteArgs, deleteStaleFlows, staleUdpFlows } from "../../lib/conntrack/mod.ts";
import type { CommandRunner } from "../../lib/exec/mod.ts";
import { silentLogger } from "../../lib/log/mod.ts";
import { ep, sps, state, svc } from "../backends/iptables/state_fixtures.ts";

const dns = svc({
  clusterIP: "172.30.0.53",
  port: 53,
  protocol: "UDP",
  nodePort: 30053,
  externalIPs: ["192.168.0.100"],
});
const web = svc({ clusterIP: "172.30.0.10", port: 80, protocol: "TCP" });

Deno.test("staleUdpFlows() targets flows to endpoints that went away, on every service address", () => {
  const prev = state([
    sps(dns, [ep("10.0.1.2", 53), ep("10.0.2.2", 53)]),
    sps(web, [ep("10.0.1.2")]),
  ]);
  const next = state([sps(dns, [ep("10.0.2.2", 53)]), sps(web, [])]);
  assert.deepEqual(staleUdpFlows(prev, next), [
    { origDst: "172.30.0.53", endpointIP: "10.0.1.2" },
    { origDst: "192.168.0.100", endpointIP: "10.0.1.2" },
    { origPortDst: 30053, endpointIP: "10.0.1.2" },
  ]);
});

Deno.test("staleUdpFlows() clears flows to a UDP service that gains its first endpoints, and ignores TCP", () => {
  const prev = state([sps(dns, []), sps(web, [])]);
  const next = state([sps(dns, [ep("10.0.2.2", 53)]), sps(web, [ep("10.0.1.2")])]);
  assert.deepEqual(staleUdpFlows(prev, next), [
    { origDst: "172.30.0.53" },
    { origDst: "192.168.0.100" },
  ]);
  assert.deepEqual(staleUdpFlows(undefined, next), [], "nothing is stale on the first sync");
});

Deno.test("staleUdpFlows() treats a deleted service's endpoints as gone", () => {
  const prev = state([sps(dns, [ep("10.0.1.2", 53)])]);
  assert.equal(staleUdpFlows(prev, state([])).length, 3);
});

Deno.test("conntrackDeleteArgs() spells the conntrack-tools filter per family", () => {
  assert.deepEqual(
    conntrackDeleteArgs("IPv4", { origDst: "172.30.0.53", endpointIP: "10.0.1.2" }),
    [
      "-D",
      "-f",
      "ipv4",
      "-p",
      "udp",
      "--orig-dst",
      "172.30.0.53",
      "--dst-nat",
      "10.0.1.2",
    ],
  );
  assert.deepEqual(conntrackDeleteArgs("IPv6", { origPortDst: 30053 }), [
    "-D",
    "-f",
    "ipv6",
    "-p",
    "udp",
    "--orig-port-dst",
    "30053",
  ]);
});

/** A fake conntrack table: flows are deleted when a filter matches them, like conntrack -D. */
function fakeConntrack(flows: { dst: string; dnat: string }[]): CommandRunner {
  return ({ args }) => {
    const get = (flag: string) => {
      const i = args.indexOf(flag);
      return i === -1 ? undefined : args[i + 1];
    };
    const dst = get("--orig-dst"), dnat = get("--dst-nat");
    const before = flows.length;
    for (let i = flows.length - 1; i >= 0; i--) {
      const f = flows[i]!;
      if ((dst === undefined || f.dst === dst) && (dnat === undefined || f.dnat === dnat)) {
        flows.splice(i, 1);
      }
    }
    const n = before - flows.length;
    return Promise.resolve({
      code: n === 0 ? 1 : 0,
      stdout: "",
      stderr: `conntrack v1.4.7 (conntrack-tools): ${n} flow entries have been deleted.\n`,
    });
  };
}

Deno.test("deleteStaleFlows() deletes matching flows, counts them and treats no match as success", async () => {
  const flows = [
    { dst: "172.30.0.53", dnat: "10.0.1.2" },
    { dst: "172.30.0.53", dnat: "10.0.1.2" },
    { dst: "172.30.0.53", dnat: "10.0.2.2" },
  ];
  const n = await deleteStaleFlows(fakeConntrack(flows), "IPv4", [
    { origDst: "172.30.0.53", endpointIP: "10.0.1.2" },
    { origDst: "172.30.0.99", endpointIP: "10.0.1.2" },
  ], silentLogger);
  assert.equal(n, 2);
  assert.deepEqual(flows, [{ dst: "172.30.0.53", dnat: "10.0.2.2" }]);
});
