/**
 * `deno task demo`: the real proxy on deploy/examples in throwaway network namespaces. Sends
 * traffic to a ClusterIP, a NodePort and a service without endpoints, prints who answered, the
 * rules, /healthz and /metrics excerpts, then removes everything. Without root it prints what
 * `render` would apply instead.
 */
import {
  createTopology,
  type ProbeAnswer,
  type ProbeRequest,
  proxyRunArgs,
  REPO_ROOT,
  spawnProxy,
  type Topology,
} from "./netns/mod.ts";
import { printNftablesTable } from "./demo_nftables.ts";

const manifests = `${REPO_ROOT}deploy/examples`;
/** `--proxy-mode MODE` or `--proxy-mode=MODE` after `deno task demo --`; default iptables. */
const modeAt = Deno.args.findIndex((a) => a.startsWith("--proxy-mode"));
const mode = modeAt < 0
  ? "iptables"
  : Deno.args[modeAt]!.includes("=")
  ? Deno.args[modeAt]!.split("=")[1]!
  : Deno.args[modeAt + 1] ?? "iptables";
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
  for (const a of await topo.probe(req)) console.log(`  ${describe(a)}`);
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

// A fresh machine may lack iptables, conntrack or iproute2: install them as the tests do.
const deps = await new Deno.Command("bash", {
  args: [`${REPO_ROOT}scripts/install_test_deps.sh`],
  stdout: "inherit",
  stderr: "inherit",
}).output();
if (!deps.success) await renderFallback("Could not install the netadmin tools the demo needs");

const topo = await createTopology({
  prefix: "demo",
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
  console.log("deno-kube-proxy is running in the node namespace on deploy/examples.");

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
  await show(topo, "demo/nothing-here has no endpoints (REJECT)", {
    from: "client",
    proto: "tcp",
    to: "172.30.0.20:80",
    count: 1,
  });

  if (mode === "nftables") {
    await printNftablesTable((cmd, args) => topo.exec("node", cmd, args), heading);
  } else {
    heading("iptables-legacy-save -t nat (the proxy's rules)");
    const nat = await topo.exec("node", "iptables-legacy-save", ["-t", "nat"]);
    console.log(nat.stdout.split("\n").filter((l) => l.includes("KUBE-")).join("\n"));
  }

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
