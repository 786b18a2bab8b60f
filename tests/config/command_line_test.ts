import assert from "node:assert/strict";
import { ConfigError, parseCommandLine, type ProxyConfig } from "../../lib/config/mod.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { type CommandLine } from "../../lib/config/types.ts";
import { flagTable } from "../../lib/config/_flag_table.ts";
import { TRACE_FLAGS } from "../../lib/config/_trace_args.ts";

const FLAGS = flagTable(MODE_CONFIG_SECTIONS).flags;

const hostname = () => "Node-A";

function parse(args: string[], files: Record<string, string> = {}): CommandLine {
  return parseCommandLine(args, {
    modeSections: MODE_CONFIG_SECTIONS,
    hostname,
    readTextFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`No such file: ${path}`);
      return text;
    },
  });
}

function rejects(args: string[], message: RegExp, files: Record<string, string> = {}): void {
  assert.throws(() => parse(args, files), (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
    assert.match(err.message, message);
    return true;
  });
}

/** One case per config-changing flag: the arguments and what they must change. */
const FLAG_CASES: Array<[string[], (c: ProxyConfig) => unknown, unknown]> = [
  [["--bind-address=10.1.2.3"], (c) => c.bindAddress, "10.1.2.3"],
  [["--bind-address-hard-fail"], (c) => c.bindAddressHardFail, true],
  [["--cluster-cidr", "10.0.0.0/8,fd00::/48"], (c) => c.clusterCIDRs, ["10.0.0.0/8", "fd00::/48"]],
  [["--cluster-cidr=11.0.0.0/8", "--cluster-cidr=10.0.0.0/8"], (c) => c.clusterCIDRs, [
    "10.0.0.0/8",
  ]],
  [["--config-sync-period=1m"], (c) => c.configSyncPeriodMs, 60_000],
  [["--conntrack-max-per-core", "0"], (c) => c.conntrack.maxPerCore, 0],
  [["--conntrack-min=1000"], (c) => c.conntrack.min, 1000],
  [["--conntrack-tcp-be-liberal=true"], (c) => c.conntrack.tcpBeLiberal, true],
  [["--conntrack-tcp-timeout-close-wait=30m"], (c) => c.conntrack.tcpCloseWaitTimeoutMs, 1_800_000],
  [
    ["--conntrack-tcp-timeout-established=2h"],
    (c) => c.conntrack.tcpEstablishedTimeoutMs,
    7_200_000,
  ],
  [["--conntrack-udp-timeout=30s"], (c) => c.conntrack.udpTimeoutMs, 30_000],
  [["--conntrack-udp-timeout-stream=5m"], (c) => c.conntrack.udpStreamTimeoutMs, 300_000],
  [["--detect-local-mode=NodeCIDR"], (c) => c.detectLocalMode, "NodeCIDR"],
  [["--feature-gates=PreferSameTrafficDistribution=false,AllAlpha=false"], (c) => c.featureGates, {
    PreferSameTrafficDistribution: false,
    AllAlpha: false,
  }],
  [["--healthz-bind-address=127.0.0.1:9999"], (c) => c.healthzBindAddress, "127.0.0.1:9999"],
  [["--healthz-bind-address=::"], (c) => c.healthzBindAddress, "[::]:10256"],
  [["--healthz-port=0"], (c) => c.healthzBindAddress, ""],
  [["--hostname-override=  Worker-1 "], (c) => c.hostnameOverride, "worker-1"],
  [["--iptables-localhost-nodeports=false"], (c) => c.iptables.localhostNodePorts, false],
  [["--iptables-masquerade-bit=5"], (c) => c.masqueradeBit, 5],
  [["--iptables-min-sync-period=0s"], (c) => c.minSyncPeriodMs, 0],
  [["--iptables-sync-period=10s"], (c) => c.syncPeriodMs, 10_000],
  [["--ipvs-exclude-cidrs=10.9.0.0/16,10.8.0.0/16"], (c) => c.ipvs.excludeCIDRs, [
    "10.9.0.0/16",
    "10.8.0.0/16",
  ]],
  [["--ipvs-min-sync-period=2s"], (c) => c.ipvs.minSyncPeriodMs, 2000],
  [["--ipvs-scheduler=wrr"], (c) => c.ipvs.scheduler, "wrr"],
  [["--ipvs-strict-arp"], (c) => c.ipvs.strictARP, true],
  [["--ipvs-sync-period=45s"], (c) => c.ipvs.syncPeriodMs, 45_000],
  [["--ipvs-tcp-timeout=15m"], (c) => c.ipvs.tcpTimeoutMs, 900_000],
  [["--ipvs-tcpfin-timeout=1m"], (c) => c.ipvs.tcpFinTimeoutMs, 60_000],
  [["--ipvs-udp-timeout=10s"], (c) => c.ipvs.udpTimeoutMs, 10_000],
  [["--kube-api-burst=20"], (c) => c.clientConnection.burst, 20],
  [
    ["--kube-api-content-type", "application/json"],
    (c) => c.clientConnection.contentType,
    "application/json",
  ],
  [["--kube-api-qps=2.5"], (c) => c.clientConnection.qps, 2.5],
  [
    ["--kubeconfig=/etc/kube/proxy.conf"],
    (c) => c.clientConnection.kubeconfig,
    "/etc/kube/proxy.conf",
  ],
  [["--logging-format=json"], (c) => c.logging.format, "json"],
  [["--manifests", "/srv/state"], (c) => c.manifests, "/srv/state"],
  [["--masquerade-all"], (c) => c.masqueradeAll, true],
  [["--master=https://10.0.0.1:6443"], (c) => c.master, "https://10.0.0.1:6443"],
  [["--metrics-bind-address=0.0.0.0:10249"], (c) => c.metricsBindAddress, "0.0.0.0:10249"],
  [["--metrics-port=0"], (c) => c.metricsBindAddress, ""],
  [["--node-ip=192.168.0.2,FD00:0::2"], (c) => c.nodeIPs, ["192.168.0.2", "fd00::2"]],
  [["--nodeport-addresses=primary"], (c) => c.nodePortAddresses, ["primary"]],
  [["--oom-score-adj", "-500"], (c) => c.oomScoreAdj, -500],
  [["--pod-bridge-interface=cbr0"], (c) => c.detectLocal.bridgeInterface, "cbr0"],
  [["--pod-interface-name-prefix=veth"], (c) => c.detectLocal.interfaceNamePrefix, "veth"],
  [["--profiling=false"], (c) => c.enableProfiling, false],
  [["--log-flush-frequency=2s"], (c) => c.logging.flushFrequencyMs, 2000],
  [["--log-json-info-buffer-size=0"], (c) => c.logging.options.json.infoBufferSize, "0"],
  [["--log-json-split-stream=false"], (c) => c.logging.options.json.splitStream, false],
  [["--log-text-info-buffer-size=0Ki"], (c) => c.logging.options.text.infoBufferSize, "0Ki"],
  [["--log-text-split-stream=false"], (c) => c.logging.options.text.splitStream, false],
  [["--vmodule="], (c) => c.logging.vmodule, []],
  [["--proxy-mode=ipvs"], (c) => c.mode, "ipvs"],
  [["--show-hidden-metrics-for-version=1.33"], (c) => c.showHiddenMetricsForVersion, "1.33"],
  [["--v=3"], (c) => c.logging.verbosity, 3],
];

Deno.test("parseCommandLine() parses every flag into the configuration", () => {
  for (const [args, read, expected] of FLAG_CASES) {
    assert.deepEqual(read(parse(args).config), expected, args.join(" "));
  }
});

Deno.test("parseCommandLine() test table covers every flag", () => {
  const covered = new Set(FLAG_CASES.map(([args]) => args[0]!.replace(/^--?/, "").split("=")[0]));
  // The trace flags have their own tests (trace_args_test.ts).
  const commands = [
    "boot-id-file",
    "cleanup",
    "config",
    "help",
    "init-only",
    "machine-id-file",
    "version",
    "write-config-to",
    ...TRACE_FLAGS,
  ];
  const missing = FLAGS.map((f) => f.name).filter((n) => !covered.has(n) && !commands.includes(n));
  assert.deepEqual(missing, []);
});

Deno.test("parseCommandLine() reads '_' in flag names as '-', as upstream's flag normaliser does", () => {
  assert.equal(parse(["--proxy_mode=ipvs"]).config.mode, "ipvs");
  assert.equal(parse(["--iptables_sync_period", "7s"]).config.syncPeriodMs, 7000);
});

Deno.test("parseCommandLine() accepts Go flag syntax for values and booleans", () => {
  for (const args of [["-v=4"], ["-v", "4"], ["-v4"], ["--v=4"], ["--v", "4"]]) {
    assert.equal(parse(args).config.logging.verbosity, 4, args.join(" "));
  }
  for (const [word, value] of [["true", true], ["false", false], ["1", true], ["F", false]]) {
    assert.equal(parse([`--masquerade-all=${word}`]).config.masqueradeAll, value, String(word));
  }
  assert.equal(parse(["--oom-score-adj", "-1000"]).config.oomScoreAdj, -1000);
});

Deno.test("parseCommandLine() keeps the last value of a repeated flag and joins list flags", () => {
  assert.equal(parse(["-v=1", "--v=5"]).config.logging.verbosity, 5);
  const c = parse(["--nodeport-addresses=10.0.0.0/8", "--nodeport-addresses=fd00::/64"]).config;
  assert.deepEqual(c.nodePortAddresses, ["10.0.0.0/8", "fd00::/64"]);
});

Deno.test("parseCommandLine() picks the command from the flags and the render subcommand", () => {
  assert.equal(parse([]).command, "run");
  assert.equal(parse(["render", "--proxy-mode=nftables"]).command, "render");
  assert.equal(parse(["--proxy-mode=ipvs", "render"]).config.mode, "ipvs");
  assert.equal(parse(["--cleanup"]).command, "cleanup");
  assert.equal(parse(["--help"]).command, "help");
  assert.equal(parse(["-h"]).command, "help");
  assert.equal(parse(["--version"]).command, "version");
  const w = parse(["--write-config-to", "/tmp/kp.yaml"]);
  assert.equal(w.command, "write-config");
  assert.equal(w.writeConfigTo, "/tmp/kp.yaml");
});

Deno.test("parseCommandLine() resolves the node name from the host name, lower-cased", () => {
  assert.equal(parse([]).config.hostnameOverride, "node-a");
  assert.equal(parse(["--write-config-to=/x"]).config.hostnameOverride, "");
});

Deno.test("parseCommandLine() resolves mode-specific settings for nftables", () => {
  const c = parse(["--proxy-mode=nftables", "--iptables-sync-period=20s"]).config;
  assert.equal(c.syncPeriodMs, 20_000);
  assert.deepEqual(c.nodePortAddresses, ["primary"]);
  const ipvs = parse(["--proxy-mode=ipvs", "--iptables-sync-period=20s"]).config;
  assert.equal(ipvs.syncPeriodMs, 30_000);
});

Deno.test("parseCommandLine() rejects unknown flags and stray arguments", () => {
  rejects(["--no-such-flag"], /^Unknown flag "--no-such-flag"/);
  rejects(["-x"], /^Unknown flag "-x"/);
  rejects(["-config=/x"], /^Unknown flag "-config=\/x"/);
  rejects(["run"], /^Unexpected argument "run"/);
  rejects(["render", "render"], /^Unexpected argument "render"/);
  rejects(["--", "--v=2"], /^Unexpected argument "--v=2"/);
});

Deno.test("parseCommandLine() names the flag and the expected form for each kind of bad value", () => {
  const cases: Array<[string[], RegExp]> = [
    [["--iptables-sync-period=abc"], /^Invalid --iptables-sync-period "abc": expected a duration/],
    [
      ["--iptables-masquerade-bit=x"],
      /^Invalid --iptables-masquerade-bit "x": expected a 32-bit integer/,
    ],
    [
      ["--iptables-masquerade-bit=32"],
      /^Invalid --iptables-masquerade-bit "32": expected an integer from 0 to 31/,
    ],
    [["--masquerade-all=yes"], /^Invalid --masquerade-all "yes": expected true or false/],
    [["--kube-api-qps=fast"], /^Invalid --kube-api-qps "fast": expected a number/],
    [["-v=-1"], /^Invalid -v "-1": expected a non-negative integer/],
    [
      ["--proxy-mode=userspace"],
      /^Invalid --proxy-mode "userspace": expected one of iptables, ipvs, nftables/,
    ],
    [
      ["--detect-local-mode=Magic"],
      /^Invalid --detect-local-mode "Magic": expected one of ClusterCIDR/,
    ],
    [["--logging-format=xml"], /^Invalid --logging-format "xml": expected one of text, json/],
    [["--bind-address=10.0.0"], /^Invalid --bind-address "10.0.0": expected an IP address/],
    [
      ["--healthz-bind-address=host:1"],
      /^Invalid --healthz-bind-address "host:1": expected an IP or IP:port/,
    ],
    [["--metrics-bind-address=1.2.3.4:70000"], /^Invalid --metrics-bind-address "1.2.3.4:70000"/],
    [
      ["--node-ip=1.2.3.4,5.6.7.8"],
      /^Invalid --node-ip "1.2.3.4,5.6.7.8": expected one IP or an IPv4,IPv6 pair/,
    ],
    [["--node-ip=node1"], /^Invalid --node-ip "node1"/],
    [
      ["--feature-gates=A=maybe"],
      /^Invalid --feature-gates "A=maybe": expected comma-separated name=true\|false pairs/,
    ],
    [["--cluster-cidr=10.0.0.0/33"], /^Invalid --cluster-cidr "10.0.0.0\/33": expected CIDRs/],
    [
      ["--cluster-cidr=10.0.0.0/8,11.0.0.0/8"],
      /^Invalid --cluster-cidr "10.0.0.0\/8,11.0.0.0\/8": expected at most one IPv4 and one IPv6/,
    ],
    [
      ["--detect-local-mode=BridgeInterface", "--pod-bridge-interface=br 0"],
      /^Invalid --pod-bridge-interface "br 0": expected an interface name of 1 to 15/,
    ],
    [
      ["--detect-local-mode=InterfaceNamePrefix", "--pod-interface-name-prefix=veth+"],
      /^Invalid --pod-interface-name-prefix "veth\+": expected an interface name prefix/,
    ],
    [
      ["--nodeport-addresses=primary,10.0.0.0/8"],
      /^Invalid --nodeport-addresses "primary,10.0.0.0\/8"/,
    ],
    [
      ["--nodeport-addresses=10.0.0.1"],
      /^Invalid --nodeport-addresses "10.0.0.1": expected a CIDR/,
    ],
    [
      ["--oom-score-adj=1001"],
      /^Invalid --oom-score-adj "1001": expected an integer from -1000 to 1000/,
    ],
    [["--conntrack-min=-1"], /^Invalid --conntrack-min "-1": expected an integer of 0 or more/],
    [
      ["--conntrack-udp-timeout=-1s"],
      /^Invalid --conntrack-udp-timeout "-1s": expected a duration of 0 or more/,
    ],
    [
      ["--iptables-sync-period=0s"],
      /^Invalid --iptables-sync-period "0s": expected a duration greater than 0/,
    ],
    [
      ["--iptables-min-sync-period=1m"],
      /^Invalid --iptables-min-sync-period "1m": expected a duration no longer than the sync period "30s"/,
    ],
    [["--proxy-mode=ipvs", "--ipvs-sync-period=0s"], /^Invalid --ipvs-sync-period "0s"/],
    [
      ["--proxy-mode=ipvs", "--ipvs-scheduler=fastest"],
      /^Invalid --ipvs-scheduler "fastest": expected one of rr/,
    ],
    [["--proxy-mode=ipvs", "--ipvs-exclude-cidrs=bad"], /^Invalid --ipvs-exclude-cidrs "bad"/],
    [
      ["--config-sync-period=0s"],
      /^Invalid --config-sync-period "0s": expected a duration greater than 0/,
    ],
    [["--kube-api-burst=-1"], /^Invalid --kube-api-burst "-1"/],
    [
      ["--detect-local-mode=BridgeInterface"],
      /^Invalid --pod-bridge-interface "": expected an interface name/,
    ],
    [["--detect-local-mode=InterfaceNamePrefix"], /^Invalid --pod-interface-name-prefix ""/],
    [
      ["--show-hidden-metrics-for-version=1.20"],
      /^Invalid --show-hidden-metrics-for-version "1.20"/,
    ],
    [["--hostname-override=   "], /^Invalid --hostname-override " {3}": expected a node name/],
    [["--kubeconfig"], /^Missing value for --kubeconfig/],
  ];
  for (const [args, message] of cases) rejects(args, message);
});

Deno.test("parseCommandLine() lists every invalid value, one per line", () => {
  rejects(["--oom-score-adj=2000", "--conntrack-min=-1"], /oom-score-adj.*\n.*conntrack-min/);
});

Deno.test("parseCommandLine() stops at --help before reading the config file", () => {
  assert.equal(parse(["--help", "--config=/missing.yaml"]).command, "help");
});
