/**
 * One test per row of docs/flags.md: what the flag changes beyond its parsed value — the options
 * the modes' renderers and the conntrack tuning get, the rules `render` prints, the command that
 * runs, or the exit-1 message of a refused value. A last test checks every flag has a case.
 * IP plan: node 192.168.0.2, pods 10.0.0.0/8, service IPs 172.30.0.0/16.
 */
import assert from "node:assert/strict";
import { listsInProtobufFor } from "../../lib/app/state_source.ts";
import { trackerSettings } from "../../lib/app/tracker_settings.ts";
import { commonRenderOptions, featureEnabled } from "../../lib/config/mod.ts";
import { createProxyTracker } from "../../lib/proxy/mod.ts";
import {
  FLAGS,
  HINT_STATE,
  knobs,
  LB_STATE,
  parse,
  refused,
  render,
} from "./flag_effect_fixtures.ts";
import { type Effect, MODE_FLAG_EFFECTS } from "./mode_flag_effects.ts";

/** Each flag's effect. */
const EFFECTS: Record<string, Effect> = {
  ...MODE_FLAG_EFFECTS,
  "bind-address": async () => {
    // The node's own address is outside the source ranges; as primary IP, 192.168.7.7 is in.
    const plain = await render(LB_STATE, []);
    const bound = await render(LB_STATE, ["--bind-address=192.168.7.7"]);
    const fromNode = /-A KUBE-FW-\S+ .*-s 198\.51\.100\.20 -j KUBE-EXT-/;
    assert.doesNotMatch(plain, fromNode);
    assert.match(bound, fromNode, "traffic from the node to its LB IP is allowed");
    assert.equal(
      trackerSettings(parse(["--bind-address=0.0.0.0"]).config).primaryNodeIP,
      undefined,
    );
  },
  "bind-address-hard-fail": () => {
    assert.equal(parse(["--bind-address-hard-fail"]).config.bindAddressHardFail, true);
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" +
      "bindAddressHardFail: true\n";
    assert.equal(parse(["--config=/c.yaml"], { "/c.yaml": file }).config.bindAddressHardFail, true);
  },
  "boot-id-file": () => assert.equal(parse(["--boot-id-file=/x"]).command, "run"),
  cleanup: () => assert.equal(parse(["--cleanup"]).command, "cleanup"),
  "cluster-cidr": () => {
    const c = parse(["--cluster-cidr=10.0.0.0/8,fd00::/48"]).config;
    assert.deepEqual(commonRenderOptions(c, "IPv4").clusterCIDRs, ["10.0.0.0/8"]);
    assert.deepEqual(commonRenderOptions(c, "IPv6").clusterCIDRs, ["fd00::/48"]);
  },
  config: () => {
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" +
      "mode: nftables\n";
    const cl = parse(["--config=/c.yaml", "--proxy-mode=ipvs"], { "/c.yaml": file });
    assert.equal(cl.config.mode, "nftables", "the file wins over the flags");
  },
  "config-sync-period": () => {
    assert.equal(parse(["--config-sync-period=1m"]).config.configSyncPeriodMs, 60_000);
    refused(
      ["--config-sync-period=0s"],
      /^Invalid --config-sync-period "0s": expected a duration greater than 0/,
    );
    // A resync hands every cached object over again; that queues no sync, as upstream.
    const tracker = createProxyTracker({ nodeName: "node1" });
    for (const object of HINT_STATE) tracker.handleEvent({ type: "ADDED", object } as never);
    tracker.snapshot("IPv4");
    for (const object of HINT_STATE) {
      assert.equal(tracker.handleEvent({ type: "MODIFIED", object } as never), false);
    }
  },
  "conntrack-max-per-core": () => {
    assert.equal(
      knobs(["--conntrack-max-per-core=100000"]).get("net.netfilter.nf_conntrack_max"),
      400_000,
    );
    assert.equal(
      knobs(["--conntrack-max-per-core=0"]).has("net.netfilter.nf_conntrack_max"),
      false,
    );
  },
  "conntrack-min": () =>
    assert.equal(knobs(["--conntrack-min=900000"]).get("net.netfilter.nf_conntrack_max"), 900_000),
  "conntrack-tcp-be-liberal": () =>
    assert.equal(
      knobs(["--conntrack-tcp-be-liberal"]).get("net.netfilter.nf_conntrack_tcp_be_liberal"),
      1,
    ),
  "conntrack-tcp-timeout-close-wait": () =>
    assert.equal(
      knobs(["--conntrack-tcp-timeout-close-wait=7m"]).get(
        "net.netfilter.nf_conntrack_tcp_timeout_close_wait",
      ),
      420,
    ),
  "conntrack-tcp-timeout-established": () =>
    assert.equal(
      knobs(["--conntrack-tcp-timeout-established=2h"]).get(
        "net.netfilter.nf_conntrack_tcp_timeout_established",
      ),
      7200,
    ),
  "conntrack-udp-timeout": () =>
    assert.equal(
      knobs(["--conntrack-udp-timeout=45s"]).get("net.netfilter.nf_conntrack_udp_timeout"),
      45,
    ),
  "conntrack-udp-timeout-stream": () =>
    assert.equal(
      knobs(["--conntrack-udp-timeout-stream=3m"]).get(
        "net.netfilter.nf_conntrack_udp_timeout_stream",
      ),
      180,
    ),
  "detect-local-mode": () => {
    const c =
      parse(["--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=veth"]).config;
    assert.equal(commonRenderOptions(c, "IPv4").detectLocalMode, "InterfaceNamePrefix");
  },
  "feature-gates": async () => {
    refused(
      ["--feature-gates=Foo=true"],
      /^Invalid --feature-gates "Foo=true": unrecognized feature gate "Foo"$/,
    );
    refused(
      ["--feature-gates=MultiCIDRServiceAllocator=false"],
      /cannot set feature gate "MultiCIDRServiceAllocator" to false: it is GA and locked to true/,
    );
    refused(["--feature-gates=ComponentFlagz=true"], /"ComponentFlagz" cannot be true: .*\/flagz/);
    refused(
      ["--feature-gates=AllBeta=true"],
      /^Invalid --feature-gates "AllBeta=true": feature gate "WatchListClient" \(set by AllBeta\)/,
    );
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" +
      "featureGates:\n  NoSuchGate: true\n";
    assert.throws(
      () => parse(["--config=/c.yaml"], { "/c.yaml": file }),
      /^ConfigError: Invalid featureGates "NoSuchGate=true" in \/c\.yaml: unrecognized feature gate "NoSuchGate"/,
    );
    // AllBeta=false turns PreferSameTrafficDistribution off unless it is named itself.
    assert.equal(
      featureEnabled(
        parse(["--feature-gates=AllBeta=false"]).config.featureGates,
        "PreferSameTrafficDistribution",
      ),
      false,
    );
    // Same-node hints honoured: only the endpoint hinted for node1; off: both zone-a endpoints.
    const on = await render(HINT_STATE, []);
    const off = await render(HINT_STATE, ["--feature-gates=PreferSameTrafficDistribution=false"]);
    assert.doesNotMatch(on, /DNAT --to-destination 10\.0\.1\.3:8080/);
    assert.match(on, /DNAT --to-destination 10\.0\.1\.4:8080/);
    assert.match(off, /DNAT --to-destination 10\.0\.1\.3:8080/);
    assert.match(off, /DNAT --to-destination 10\.0\.1\.4:8080/);
  },
  from: () =>
    assert.equal(
      parse(["trace", "--from=10.0.1.2", "--to=172.30.0.10:80"]).trace?.from,
      "10.0.1.2",
    ),
  "healthz-bind-address": () =>
    assert.equal(parse(["--healthz-bind-address=::"]).config.healthzBindAddress, "[::]:10256"),
  "healthz-port": () => {
    assert.equal(
      parse(["--healthz-port=0"]).config.healthzBindAddress,
      "",
      "0 disables the server",
    );
    // As upstream, the port is added only to an address without one.
    const config = parse(["--healthz-bind-address=127.0.0.1", "--healthz-port=9999"]).config;
    assert.equal(config.healthzBindAddress, "127.0.0.1:9999");
    assert.equal(parse(["--healthz-port=9999"]).config.healthzBindAddress, "0.0.0.0:10256");
  },
  help: () => assert.equal(parse(["-h"]).command, "help"),
  "hostname-override": () => {
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" +
      "hostnameOverride: from-file\n";
    const cl = parse(["--config=/c.yaml", "--hostname-override=Flag-Node"], { "/c.yaml": file });
    assert.equal(cl.config.hostnameOverride, "flag-node", "wins over the file, lower-cased");
  },
  "init-only": () => {
    assert.equal(parse(["--init-only"]).command, "init-only");
    assert.equal(parse(["--init-only", "--cleanup"]).command, "cleanup", "upstream's order");
  },
  "kube-api-burst": () =>
    refused(
      ["--kube-api-burst=-1"],
      /^Invalid --kube-api-burst "-1": expected an integer of 0 or more/,
    ),
  "kube-api-content-type": () => {
    // Upstream's default asks for protobuf: Services and EndpointSlices are listed in it.
    assert.equal(listsInProtobufFor(parse([]).config.clientConnection), true);
    const json = parse(["--kube-api-content-type=application/json"]).config.clientConnection;
    assert.equal(json.contentType, "application/json");
    assert.equal(listsInProtobufFor(json), false);
  },
  "kube-api-qps": () =>
    assert.equal(parse(["--kube-api-qps=2.5"]).config.clientConnection.qps, 2.5),
  kubeconfig: () => {
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n" +
      "clientConnection:\n  kubeconfig: /from/file\n";
    const cl = parse(["--config=/c.yaml", "--kubeconfig=/from/flag"], { "/c.yaml": file });
    assert.equal(cl.config.clientConnection.kubeconfig, "/from/file", "the file wins");
  },
  "log-flush-frequency": () => {
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";
    const cl = parse(["--config=/c.yaml", "--log-flush-frequency=2s"], { "/c.yaml": file });
    assert.equal(cl.config.logging.flushFrequencyMs, 2000, "a logging flag wins over the file");
  },
  "log-json-info-buffer-size": () =>
    refused(
      ["--log-json-info-buffer-size=64Ki"],
      /^Invalid --log-json-info-buffer-size "64Ki": not supported: .*expected 0/,
    ),
  "log-json-split-stream": () =>
    refused(
      ["--log-json-split-stream"],
      /^Invalid --log-json-split-stream "true": not supported: every log line goes to stderr/,
    ),
  "log-text-info-buffer-size": () =>
    refused(
      ["--log-text-info-buffer-size=1M"],
      /^Invalid --log-text-info-buffer-size "1M": not supported/,
    ),
  "log-text-split-stream": () =>
    refused(
      ["--log-text-split-stream=true"],
      /^Invalid --log-text-split-stream "true": not supported/,
    ),
  "logging-format": () => {
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";
    assert.equal(
      parse(["--config=/c.yaml", "--logging-format=json"], { "/c.yaml": file }).config.logging
        .format,
      "json",
    );
  },
  "machine-id-file": () => assert.equal(parse(["--machine-id-file=/x,/y"]).command, "run"),
  manifests: () => assert.equal(parse(["--manifests=/srv/state"]).config.manifests, "/srv/state"),
  "masquerade-all": async () =>
    assert.match(
      await render(LB_STATE, ["--masquerade-all"]),
      /-A KUBE-SVC-\S+ .*-d 172\.30\.0\.20 --dport 80 -j KUBE-MARK-MASQ/,
    ),
  master: () =>
    assert.equal(parse(["--master=https://10.0.0.1:6443"]).config.master, "https://10.0.0.1:6443"),
  "metrics-bind-address": () =>
    assert.equal(
      parse(["--metrics-bind-address=0.0.0.0"]).config.metricsBindAddress,
      "0.0.0.0:10249",
    ),
  "metrics-port": () => assert.equal(parse(["--metrics-port=0"]).config.metricsBindAddress, ""),
  "node-ip": () => {
    const tracker = createProxyTracker({
      ...trackerSettings(parse(["--node-ip=192.168.9.9"]).config),
      nodeName: "node1",
    });
    assert.deepEqual(
      tracker.snapshot("IPv4").node.ips,
      ["192.168.9.9"],
      "used while no Node says otherwise",
    );
  },
  "nodeport-addresses": () =>
    assert.deepEqual(
      commonRenderOptions(parse(["--nodeport-addresses=192.168.0.0/16,fd00::/64"]).config, "IPv6")
        .nodePortAddresses,
      ["fd00::/64"],
    ),
  "oom-score-adj": () =>
    refused(
      ["--oom-score-adj=1001"],
      /^Invalid --oom-score-adj "1001": expected an integer from -1000 to 1000/,
    ),
  output: () =>
    assert.equal(
      parse(["trace", "--from=10.0.1.2", "--to=172.30.0.10:80", "--output=json"]).trace?.output,
      "json",
    ),
  "pod-bridge-interface": () =>
    assert.equal(
      commonRenderOptions(
        parse(["--detect-local-mode=BridgeInterface", "--pod-bridge-interface=cbr0"]).config,
        "IPv4",
      ).bridgeInterface,
      "cbr0",
    ),
  "pod-interface-name-prefix": () =>
    refused(
      ["--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=a+b"],
      /^Invalid --pod-interface-name-prefix "a\+b"/,
    ),
  profiling: () => {
    refused(["--profiling"], /^Invalid --profiling "true": not supported: .*\/debug\/pprof/);
    assert.equal(parse(["--profiling=false"]).config.enableProfiling, false);
  },
  "proxy-mode": () =>
    assert.deepEqual(parse(["--proxy-mode=nftables"]).config.nodePortAddresses, ["primary"]),
  rendered: () =>
    assert.equal(
      parse(["trace", "--from=10.0.1.2", "--to=172.30.0.10:80", "--rendered"]).trace?.rendered,
      true,
    ),
  "show-hidden-metrics-for-version": () => {
    assert.equal(
      parse(["--show-hidden-metrics-for-version=1.33"]).config.showHiddenMetricsForVersion,
      "1.33",
    );
    refused(
      ["--show-hidden-metrics-for-version=1.32"],
      /^Invalid --show-hidden-metrics-for-version "1.32": expected "1.33"/,
    );
  },
  source: () =>
    assert.equal(
      parse(["trace", "--from=10.0.1.2", "--to=172.30.0.10:80", "--source=node"]).trace?.source,
      "node",
    ),
  to: () =>
    assert.equal(
      parse(["trace", "--from=10.0.1.2", "--to=172.30.0.10:80/udp"]).trace?.protocol,
      "udp",
    ),
  v: () => {
    const file = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";
    assert.equal(
      parse(["--config=/c.yaml", "-v=4"], { "/c.yaml": file }).config.logging.verbosity,
      4,
    );
  },
  version: () => assert.equal(parse(["--version"]).command, "version"),
  vmodule: () =>
    refused(
      ["--vmodule=proxier*=4"],
      /^Invalid --vmodule "proxier\*=4": not supported: upstream's patterns/,
    ),
  "write-config-to": () => {
    const cl = parse(["--write-config-to=/var/lib/kube-proxy/c.yaml", "--init-only"]);
    assert.equal(cl.command, "write-config", "written before anything else, as upstream");
    assert.equal(cl.config.hostnameOverride, "", "an unset node name stays unset in the file");
  },
};

for (const [name, effect] of Object.entries(EFFECTS)) {
  Deno.test(`--${name} has its documented effect`, async () => {
    await effect();
  });
}

Deno.test("every flag has an effect case", () => {
  const missing = FLAGS.map((f) => f.name).filter((n) => !(n in EFFECTS));
  assert.deepEqual(missing, []);
});
