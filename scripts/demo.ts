/**
 * `deno task demo [-- --proxy-mode iptables|ipvs|nftables]`: the real proxy on deploy/examples
 * in throwaway network namespaces. Sends traffic to a ClusterIP, a NodePort and a service
 * without endpoints, prints who answered, the mode's kernel objects (scripts/demo_modes.ts),
 * /healthz and /metrics excerpts, then removes everything. In ipvs mode it boots the qemu IPVS
 * guest and runs the same demo inside it (scripts/demo_guest.ts). Without root it prints what
 * `render` would apply instead. DEMO_NETNS_PREFIX (default "demo") names the namespaces.
 */
import { parseArgs } from "node:util";
import { DEMO_IN_GUEST_ENV, kernelHasIpvs, runDemoInGuest } from "./demo_guest.ts";
import { DEMO_MODES, parseDemoMode } from "./demo_modes.ts";
import {
  createTopology,
  type ProbeAnswer,
  type ProbeRequest,
  proxyRunArgs,
  REPO_ROOT,
  scaledMs,
  spawnProxy,
  type Topology,
} from "./netns/mod.ts";

const cli = parseArgs({
  args: Deno.args[0] === "--" ? Deno.args.slice(1) : Deno.args,
  options: { "proxy-mode": { type: "string" } },
});
const mode = parseDemoMode(cli.values["proxy-mode"]);
const inGuest = Deno.env.get(DEMO_IN_GUEST_ENV) === "1";
const manifests = `${REPO_ROOT}deploy/examples`;
const proxyArgs = [
  `--proxy-mode=${mode}`,
  "--hostname-override=node1",
  "--cluster-cidr=10.0.0.0/8",
  "--healthz-bind-address=127.0.0.1:10256",
  "--metrics-bind-address=127.0.0.1:10249",
  "-v=2",
];

function heading(text: string): void {
  console.log(`\n=== ${text}`);
}

function describe(a: ProbeAnswer): string {
  return a.ok ? `answered by ${a.name} (it saw the client as ${a.peer})` : `failed: ${a.error}`;
}

async function show(topo: Topology, label: string, req: ProbeRequest): Promise<void> {
  heading(`${label}: ${req.proto.toUpperCase()} from ${req.from} to ${req.to}`);
  // The probe's 1 s answer timeout, stretched under emulation (the IPVS guest sets the scale).
  const timed = { timeoutMs: scaledMs(1000), ...req };
  for (const a of await topo.probe(timed)) console.log(`  ${describe(a)}`);
}

async function renderFallback(reason: string): Promise<void> {
  console.log(`${reason}: showing what \`render\` would apply instead.\n`);
  const out = await new Deno.Command(Deno.execPath(), {
    args: proxyRunArgs(["render", `--manifests=${manifests}`, ...proxyArgs]),
    cwd: REPO_ROOT,
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  Deno.exit(out.code);
}

if (Deno.uid() !== 0) await renderFallback("Not running as root");

// A fresh machine may lack iptables, conntrack, iproute2 or qemu: install them as the tests
// do (the IPVS guest runs the host's binaries, read-only and offline, so not in there).
if (!inGuest) {
  const deps = await new Deno.Command("bash", {
    args: [`${REPO_ROOT}scripts/install_test_deps.sh`],
    stdout: "inherit",
    stderr: "inherit",
  }).output();
  if (!deps.success) await renderFallback("Could not install the netadmin tools the demo needs");
}
if (mode === "ipvs" && !await kernelHasIpvs()) {
  if (inGuest) throw new Error("The IPVS guest's kernel has no IPVS (/proc/net/ip_vs is missing)");
  Deno.exit(await runDemoInGuest(["--proxy-mode", "ipvs"]));
}

const topo = await createTopology({
  prefix: Deno.env.get("DEMO_NETNS_PREFIX") ?? "demo",
  ipv6: false,
  pods: [{ name: "web-1", ip: "10.0.1.2" }, { name: "web-2", ip: "10.0.2.2" }, {
    name: "client",
    ip: "10.0.3.2",
  }],
});
let failed = false;
try {
  await topo.startEchoServers({ tcp: [8080], udp: [5353] });
  // On a node marked iptables-legacy, as kubelet marks it (the program detects the flavour).
  const proxy = await spawnProxy(topo, [`--manifests=${manifests}`, ...proxyArgs], {
    label: "deno-kube-proxy",
  });
  console.log(
    `deno-kube-proxy (${mode} mode) is running in the node namespace on deploy/examples.`,
  );

  await show(topo, "ClusterIP demo/web", {
    from: "client",
    proto: "tcp",
    to: "172.30.0.10:80",
    count: 6,
  });
  await show(topo, "ClusterIP demo/dns", {
    from: "client",
    proto: "udp",
    to: "172.30.0.53:53",
    count: 4,
  });
  await show(topo, "NodePort demo/web (masqueraded: ETP Cluster)", {
    from: "external",
    proto: "tcp",
    to: "192.168.0.2:30080",
    count: 4,
  });
  await show(topo, `demo/nothing-here has no endpoints (${DEMO_MODES[mode].noEndpoints})`, {
    from: "client",
    proto: "tcp",
    to: "172.30.0.20:80",
    count: 1,
  });

  console.log(`\nThe proxy's kernel objects (${mode} mode):`);
  await DEMO_MODES[mode].show(topo);

  heading("GET /healthz");
  console.log(
    (await topo.exec("node", "curl", ["-s", "-i", "http://127.0.0.1:10256/healthz"])).stdout,
  );
  heading("GET /metrics (excerpt)");
  const metrics = await topo.exec("node", "curl", ["-s", "http://127.0.0.1:10249/metrics"]);
  console.log(
    metrics.stdout.split("\n").filter((l) =>
      /^kubeproxy_(sync_proxy_rules_(iptables_total|nftables_sync_failures_total|last_timestamp|duration_seconds_count|endpoint_changes_total|service_changes_total))/
        .test(l)
    ).join("\n"),
  );
  await proxy.kill(2000);
  heading("deno-kube-proxy log");
  console.log(proxy.output());
} catch (err) {
  failed = true;
  console.error(`Demo failed: ${err instanceof Error ? err.message : err}`);
  console.error(topo.logs());
} finally {
  await topo.destroy();
  console.log("\nRemoved every namespace and process the demo made.");
}
if (failed) Deno.exit(1);
