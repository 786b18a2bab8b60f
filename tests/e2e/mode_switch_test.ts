/**
 * Taking over a node without a blip, with real packets: while a client in a pod opens a TCP
 * connection to a ClusterIP every 20 ms and sends a UDP datagram every 100 ms from one source
 * port, the node switches from one rule set to another: upstream's iptables rules (ours render
 * the same, applied with iptables-restore and no program running) to our iptables or nftables
 * mode, and between our iptables and nftables modes (the old program stopped with SIGTERM,
 * which leaves its rules, then the new one started on the same state). Each switch must lose
 * no connection, keep the UDP flow's conntrack entry (same id) and its endpoint, leave no
 * answered-traffic gap over 1 s, and end with none of the old mode's rules left. The counts are
 * printed. Namespaces `sw1*` and `sw2*`. Needs root, iptables (legacy and nft), nft and
 * conntrack; fails loudly without them.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, services 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import type { SpawnedProcess, Topology } from "../../scripts/netns/mod.ts";
import { endpointSlice, list, node1, service, type TestPort } from "./support/cluster_objects.ts";
import { eventually, type ManifestDir, runProxyOnce, startProxy } from "./support/proxy_process.ts";
import { countTraffic, type TrafficReport } from "./support/switch_traffic.ts";
import { withTopology } from "./support/with_topology.ts";

const WEB: TestPort[] = [{ name: "http", port: 80, targetPort: 8080 }];
const DNS: TestPort[] = [{ name: "dns", port: 53, targetPort: 8080, protocol: "UDP" }];
const POD_A = "10.0.1.2", POD_B = "10.0.2.2", CLIENT = "10.0.3.2";
const TRAFFIC = decodeURIComponent(
  new URL("./support/switch_traffic.ts", import.meta.url).pathname,
);

const CLUSTER = list([
  node1(),
  service("demo", "web", "172.30.0.10", WEB),
  endpointSlice("demo", "web", [POD_A, POD_B], WEB),
  service("demo", "dns", "172.30.0.53", DNS),
  endpointSlice("demo", "dns", [POD_A, POD_B], DNS),
]);

/** The flags every program run here gets (besides startProxy's defaults). */
const PROGRAM_FLAGS = ["--hostname-override=node1", "--cluster-cidr=10.0.0.0/8"];

type Mode = "iptables" | "nftables";

async function mustExec(topo: Topology, cmd: string, args: string[], stdin?: string) {
  const out = await topo.exec("node", cmd, args, stdin === undefined ? {} : { stdin });
  assert.equal(out.code, 0, `${cmd} ${args.join(" ")}: ${out.stderr}`);
  return out.stdout;
}

/** Writes the iptables rules upstream kube-proxy would hold for CLUSTER, with no program. */
async function applyUpstreamRules(topo: Topology, dir: ManifestDir): Promise<void> {
  const render = await runProxyOnce(topo, [
    "render",
    "--proxy-mode=iptables",
    `--manifests=${dir.path}`,
    ...PROGRAM_FLAGS,
  ]);
  assert.equal(render.code, 0, render.stderr);
  assert.match(render.stdout, /-j DNAT --to-destination 10\.0\.1\.2:8080/);
  await mustExec(topo, "iptables-legacy-restore", ["--noflush", "-w", "5"], render.stdout);
}

/** Chain names kubelet owns, which no mode's cleanup removes. */
const KUBELET_CHAINS = /^KUBE-(IPTABLES-HINT|KUBELET-CANARY|FIREWALL)$/;

/** Our iptables chains in either flavour, as "flavour table chain". */
async function ourIptablesChains(topo: Topology): Promise<string[]> {
  const found: string[] = [];
  for (const flavour of ["legacy", "nft"]) {
    let table = "";
    for (const line of (await mustExec(topo, `iptables-${flavour}-save`, [])).split("\n")) {
      if (line.startsWith("*")) table = line.slice(1);
      const chain = /^:(KUBE-\S+)/.exec(line)?.[1];
      if (chain && !KUBELET_CHAINS.test(chain)) found.push(`${flavour} ${table} ${chain}`);
    }
  }
  return found;
}

async function kubeProxyTables(topo: Topology): Promise<string[]> {
  return (await mustExec(topo, "nft", ["list", "tables"])).split("\n")
    .filter((l) => / kube-proxy$/.test(l));
}

/** The old mode's leftovers after switching to `to` (empty once it is clean). */
function leftoversOf(to: Mode, topo: Topology): Promise<string[]> {
  return to === "nftables" ? ourIptablesChains(topo) : kubeProxyTables(topo);
}

/** The id of the UDP flow from the client's `sourcePort`, or null when there is none. */
async function udpFlowId(topo: Topology, sourcePort: number): Promise<string | null> {
  const out = await topo.exec("node", "conntrack", [
    "-L",
    "-p",
    "udp",
    "--orig-src",
    CLIENT,
    "--sport",
    String(sourcePort),
    "-o",
    "id",
  ]);
  return /\bid=(\d+)/.exec(out.stdout)?.[1] ?? null;
}

interface Switch {
  readonly label: string;
  /** The program of the old mode, stopped with SIGTERM; null when no program runs. */
  readonly from: SpawnedProcess | null;
  readonly to: Mode;
  readonly udpSourcePort: number;
}

/** Switches the node to `to` under traffic; returns the new program. */
async function switchUnderTraffic(
  topo: Topology,
  dir: ManifestDir,
  sw: Switch,
): Promise<SpawnedProcess> {
  const traffic = topo.spawn("client", Deno.execPath(), [
    "run",
    "--no-config",
    "--allow-net",
    "--allow-ffi",
    TRAFFIC,
    "--tcp",
    "172.30.0.10:80",
    "--udp",
    "172.30.0.53:53",
    "--udp-source-port",
    String(sw.udpSourcePort),
  ], { label: `traffic ${sw.label}` });
  await traffic.waitForOutput("traffic started");
  await eventually(
    "the UDP flow's conntrack entry",
    5000,
    async () => (await udpFlowId(topo, sw.udpSourcePort)) !== null,
  );
  const before = await udpFlowId(topo, sw.udpSourcePort);

  const switchStarted = performance.now();
  if (sw.from !== null) {
    const status = await sw.from.kill();
    assert.equal(status.code, 0, `the old program stops cleanly on SIGTERM`);
  }
  const proxy = await startProxy(topo, [
    `--manifests=${dir.path}`,
    `--proxy-mode=${sw.to}`,
    ...PROGRAM_FLAGS,
  ], { label: `proxy ${sw.to} (${sw.label})` });
  await eventually(
    `no leftover of the old mode after ${sw.label}`,
    10_000,
    async () => (await leftoversOf(sw.to, topo)).length === 0,
  );
  const switchMs = Math.round(performance.now() - switchStarted);
  await new Promise((r) => setTimeout(r, 1000));

  await traffic.kill(5000);
  const line = traffic.output().split("\n").find((l) => l.startsWith("{"));
  assert.ok(line, `traffic report missing:\n${traffic.output()}`);
  const report = JSON.parse(line) as TrafficReport;
  const tcp = countTraffic(report.tcp);
  const udp = countTraffic(report.udp);
  const after = await udpFlowId(topo, sw.udpSourcePort);
  console.log(
    `${sw.label}: switch ${switchMs} ms; TCP ${tcp.attempts} connections, ${tcp.failed} failed, ` +
      `longest gap ${tcp.maxGapMs} ms; UDP ${udp.attempts} exchanges, ${udp.failed} failed, ` +
      `longest gap ${udp.maxGapMs} ms, answered by ${udp.answeredBy.join(",")}; ` +
      `conntrack id ${before} -> ${after}`,
  );
  assert.ok(tcp.attempts >= 50, `too few TCP connections: ${tcp.attempts}`);
  assert.equal(tcp.failed, 0, `failed TCP connections: ${JSON.stringify(tcp.failures)}`);
  assert.equal(udp.failed, 0, `failed UDP exchanges: ${JSON.stringify(udp.failures)}`);
  assert.ok(tcp.maxGapMs <= 1000, `TCP gap ${tcp.maxGapMs} ms`);
  assert.ok(udp.maxGapMs <= 1000, `UDP gap ${udp.maxGapMs} ms`);
  assert.equal(udp.answeredBy.length, 1, "the UDP flow stays with its endpoint");
  assert.deepEqual(tcp.answeredBy, ["pod-a", "pod-b"]);
  assert.equal(after, before, "the UDP flow keeps its conntrack entry");
  assert.deepEqual(await leftoversOf(sw.to, topo), []);
  return proxy;
}

function scenario(prefix: string, body: (topo: Topology, dir: ManifestDir) => Promise<void>) {
  return withTopology({
    prefix,
    ipv6: false,
    pods: [{ name: "pod-a", ip: POD_A }, { name: "pod-b", ip: POD_B }, {
      name: "client",
      ip: CLIENT,
    }],
    flavour: "nft",
    requireCommands: ["conntrack"],
  }, async ({ topo, dir }) => {
    await dir.write("cluster.json", CLUSTER);
    await topo.startEchoServers({ pods: ["pod-a", "pod-b"] });
    await body(topo, dir);
  });
}

Deno.test("e2e: upstream's iptables rules -> iptables -> nftables -> iptables, no connection lost", async () => {
  await scenario("sw1", async (topo, dir) => {
    await applyUpstreamRules(topo, dir);
    const iptables = await switchUnderTraffic(topo, dir, {
      label: "upstream iptables rules -> iptables",
      from: null,
      to: "iptables",
      udpSourcePort: 40001,
    });
    const nftables = await switchUnderTraffic(topo, dir, {
      label: "iptables -> nftables",
      from: iptables,
      to: "nftables",
      udpSourcePort: 40002,
    });
    await switchUnderTraffic(topo, dir, {
      label: "nftables -> iptables",
      from: nftables,
      to: "iptables",
      udpSourcePort: 40003,
    });
  });
});

Deno.test("e2e: upstream's iptables rules -> nftables, no connection lost", async () => {
  await scenario("sw2", async (topo, dir) => {
    await applyUpstreamRules(topo, dir);
    await switchUnderTraffic(topo, dir, {
      label: "upstream iptables rules -> nftables",
      from: null,
      to: "nftables",
      udpSourcePort: 40004,
    });
  });
});
