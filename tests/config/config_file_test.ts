import assert from "node:assert/strict";
import { ConfigError, decodeConfigFile, parseCommandLine } from "../../lib/config/mod.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { type CommandLine } from "../../lib/config/types.ts";

const PATH = "/etc/kp.yaml";
const HEADER = "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeProxyConfiguration\n";

function withFile(text: string, args: string[] = []): CommandLine {
  return parseCommandLine(["--config", PATH, ...args], {
    modeSections: MODE_CONFIG_SECTIONS,
    hostname: () => "host-1",
    readTextFile: (path) => {
      assert.equal(path, PATH);
      return text;
    },
  });
}

function rejects(text: string, message: RegExp): void {
  assert.throws(
    () => decodeConfigFile(text, PATH, { modeSections: MODE_CONFIG_SECTIONS }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError, `expected ConfigError, got ${err}`);
      assert.match(err.message, message);
      return true;
    },
  );
}

const FULL = `${HEADER}
clientConnection:
  kubeconfig: /var/lib/kube-proxy/kubeconfig.conf
  qps: 20
  burst: 40
  contentType: application/json
hostnameOverride: Worker-7
bindAddress: 10.1.0.7
healthzBindAddress: 0.0.0.0:12345
metricsBindAddress: 0.0.0.0
mode: ipvs
iptables:
  masqueradeAll: true
  masqueradeBit: 13
  localhostNodePorts: false
  syncPeriod: 10s
  minSyncPeriod: 2s
ipvs:
  scheduler: lc
  syncPeriod: 1m
  minSyncPeriod: 5s
  excludeCIDRs: [10.99.0.0/16]
  strictARP: true
  tcpTimeout: 900s
  tcpFinTimeout: 30s
  udpTimeout: 10s
nftables:
  masqueradeBit: 12
detectLocalMode: InterfaceNamePrefix
detectLocal:
  interfaceNamePrefix: veth
clusterCIDR: 10.0.0.0/8,fd00::/48
nodePortAddresses: [192.168.0.0/16]
oomScoreAdj: -998
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 1h
  tcpCloseWaitTimeout: 30m
  tcpBeLiberal: true
  udpTimeout: 30s
  udpStreamTimeout: 2m
configSyncPeriod: 5m
featureGates:
  PreferSameTrafficDistribution: false
logging:
  format: json
  verbosity: 2
  flushFrequency: 1s
winkernel:
  networkName: ""
portRange: ""
`;

Deno.test("parseCommandLine() reads every section of a KubeProxyConfiguration file", () => {
  const { config: c, configFile } = withFile(FULL);
  assert.equal(configFile, PATH);
  assert.equal(c.clientConnection.kubeconfig, "/var/lib/kube-proxy/kubeconfig.conf");
  assert.equal(c.clientConnection.qps, 20);
  assert.equal(c.clientConnection.burst, 40);
  assert.equal(c.clientConnection.contentType, "application/json");
  assert.equal(c.hostnameOverride, "worker-7");
  assert.equal(c.bindAddress, "10.1.0.7");
  assert.equal(c.healthzBindAddress, "0.0.0.0:12345");
  assert.equal(c.metricsBindAddress, "0.0.0.0:10249");
  assert.equal(c.mode, "ipvs");
  assert.deepEqual(c.iptables, {
    masqueradeAll: true,
    masqueradeBit: 13,
    localhostNodePorts: false,
    syncPeriodMs: 10_000,
    minSyncPeriodMs: 2000,
  });
  assert.deepEqual(c.ipvs, {
    scheduler: "lc",
    syncPeriodMs: 60_000,
    minSyncPeriodMs: 5000,
    excludeCIDRs: ["10.99.0.0/16"],
    strictARP: true,
    tcpTimeoutMs: 900_000,
    tcpFinTimeoutMs: 30_000,
    udpTimeoutMs: 10_000,
  });
  assert.equal(c.nftables.masqueradeBit, 12);
  assert.equal(c.syncPeriodMs, 60_000);
  assert.equal(c.minSyncPeriodMs, 5000);
  assert.equal(c.masqueradeBit, 13);
  assert.equal(c.masqueradeAll, true);
  assert.equal(c.detectLocalMode, "InterfaceNamePrefix");
  assert.equal(c.detectLocal.interfaceNamePrefix, "veth");
  assert.deepEqual(c.clusterCIDRs, ["10.0.0.0/8", "fd00::/48"]);
  assert.deepEqual(c.nodePortAddresses, ["192.168.0.0/16"]);
  assert.equal(c.oomScoreAdj, -998);
  assert.deepEqual(c.conntrack, {
    maxPerCore: 0,
    min: 0,
    tcpEstablishedTimeoutMs: 3_600_000,
    tcpCloseWaitTimeoutMs: 1_800_000,
    tcpBeLiberal: true,
    udpTimeoutMs: 30_000,
    udpStreamTimeoutMs: 120_000,
  });
  assert.equal(c.configSyncPeriodMs, 300_000);
  assert.deepEqual(c.featureGates, { PreferSameTrafficDistribution: false });
  assert.equal(c.logging.format, "json");
  assert.equal(c.logging.verbosity, 2);
  assert.equal(c.logging.flushFrequencyMs, 1000);
});

Deno.test("decodeConfigFile() reads logging.vmodule (which validation then refuses)", () => {
  const c = decodeConfigFile(
    `${HEADER}logging:\n  vmodule:\n    - filePath: proxier.go\n      verbosity: 5\n`,
    PATH,
    { modeSections: MODE_CONFIG_SECTIONS },
  );
  assert.deepEqual(c.logging.vmodule, [{ filePath: "proxier.go", verbosity: 5 }]);
});

Deno.test("decodeConfigFile() applies upstream defaults to a minimal file", () => {
  const c = decodeConfigFile(HEADER, PATH, { modeSections: MODE_CONFIG_SECTIONS });
  assert.equal(c.mode, "iptables");
  assert.equal(c.healthzBindAddress, "0.0.0.0:10256");
  assert.equal(c.metricsBindAddress, "127.0.0.1:10249");
  assert.equal(c.iptables.masqueradeBit, 14);
  assert.equal(c.syncPeriodMs, 30_000);
  assert.equal(c.minSyncPeriodMs, 1000);
  assert.equal(c.oomScoreAdj, -999);
  assert.equal(c.detectLocalMode, "ClusterCIDR");
});

Deno.test("decodeConfigFile() treats Go zero values as unset where upstream defaulting does", () => {
  const c = decodeConfigFile(
    `${HEADER}mode: ""\niptables:\n  syncPeriod: 0s\n  masqueradeBit: 0\n` +
      `clientConnection:\n  qps: 0\nconntrack:\n  min: 0\noomScoreAdj: null\n`,
    PATH,
    { modeSections: MODE_CONFIG_SECTIONS },
  );
  assert.equal(c.mode, "iptables");
  assert.equal(c.iptables.syncPeriodMs, 30_000);
  assert.equal(c.clientConnection.qps, 5);
  // Pointer fields in upstream's types keep an explicit 0.
  assert.equal(c.iptables.masqueradeBit, 0);
  assert.equal(c.conntrack.min, 0);
  assert.equal(c.oomScoreAdj, -999);
});

Deno.test("decodeConfigFile() defaults the bind addresses for an IPv6 bindAddress", () => {
  const c = decodeConfigFile(`${HEADER}bindAddress: "::"\n`, PATH, {
    modeSections: MODE_CONFIG_SECTIONS,
  });
  assert.equal(c.healthzBindAddress, "[::]:10256");
  assert.equal(c.metricsBindAddress, "[::1]:10249");
});

Deno.test("decodeConfigFile() accepts JSON", () => {
  const json = JSON.stringify({
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    mode: "nftables",
    nftables: { syncPeriod: "45s" },
  });
  const c = decodeConfigFile(json, PATH, { modeSections: MODE_CONFIG_SECTIONS });
  assert.equal(c.mode, "nftables");
  assert.equal(c.syncPeriodMs, 45_000);
  assert.deepEqual(c.nodePortAddresses, ["primary"]);
});

Deno.test("decodeConfigFile() rejects unknown fields at any depth, naming their path", () => {
  rejects(
    `${HEADER}iptables:\n  masqueradeBitt: 14\n`,
    /^Unknown field "iptables.masqueradeBitt" in \/etc\/kp.yaml$/,
  );
  rejects(`${HEADER}proxyMode: ipvs\n`, /^Unknown field "proxyMode" in \/etc\/kp.yaml$/);
  rejects(
    `${HEADER}logging:\n  options:\n    text:\n      colour: true\n`,
    /^Unknown field "logging.options.text.colour"/,
  );
  rejects(
    `${HEADER}logging:\n  vmodule:\n    - filePath: a.go\n      level: 3\n`,
    /^Unknown field "logging.vmodule\[0\].level"/,
  );
});

Deno.test("decodeConfigFile() names the field and expected form for a wrong type", () => {
  rejects(
    `${HEADER}iptables:\n  masqueradeBit: abc\n`,
    /^Invalid iptables.masqueradeBit "abc" in \/etc\/kp.yaml: expected a 32-bit integer$/,
  );
  rejects(
    `${HEADER}iptables:\n  syncPeriod: 30\n`,
    /^Invalid iptables.syncPeriod "30" in \/etc\/kp.yaml: expected a duration string/,
  );
  rejects(
    `${HEADER}iptables:\n  syncPeriod: 30 seconds\n`,
    /^Invalid iptables.syncPeriod "30 seconds".*expected a duration/,
  );
  rejects(
    `${HEADER}ipvs:\n  strictARP: "yes"\n`,
    /^Invalid ipvs.strictARP "yes".*expected true or false/,
  );
  rejects(
    `${HEADER}mode: userspace\n`,
    /^Invalid mode "userspace".*expected one of "iptables", "ipvs", "nftables"/,
  );
  rejects(`${HEADER}detectLocalMode: Other\n`, /^Invalid detectLocalMode "Other"/);
  rejects(
    `${HEADER}nodePortAddresses: 10.0.0.0/8\n`,
    /^Invalid nodePortAddresses "10.0.0.0\/8".*expected a list of strings/,
  );
  rejects(
    `${HEADER}clusterCIDR: [10.0.0.0/8]\n`,
    /^Invalid clusterCIDR .*expected a comma-separated string/,
  );
  rejects(`${HEADER}iptables: true\n`, /^Invalid iptables "true".*expected a mapping/);
  rejects(
    `${HEADER}featureGates:\n  A: 1\n`,
    /^Invalid featureGates .*expected a mapping of names to true or false/,
  );
  rejects(
    `${HEADER}logging:\n  verbosity: -1\n`,
    /^Invalid logging.verbosity "-1".*expected a non-negative integer/,
  );
  rejects(`${HEADER}hostnameOverride: 42\n`, /^Invalid hostnameOverride "42".*expected a string/);
});

Deno.test("decodeConfigFile() rejects a wrong apiVersion or kind and broken YAML", () => {
  rejects(
    "apiVersion: v1\nkind: KubeProxyConfiguration\n",
    /^Invalid apiVersion "v1" in \/etc\/kp.yaml: expected "kubeproxy.config.k8s.io\/v1alpha1"$/,
  );
  rejects("kind: KubeProxyConfiguration\n", /^Invalid apiVersion ""/);
  rejects(
    "apiVersion: kubeproxy.config.k8s.io/v1alpha1\nkind: KubeletConfiguration\n",
    /^Invalid kind "KubeletConfiguration".*expected "KubeProxyConfiguration"/,
  );
  rejects(`${HEADER}mode: [\n`, /^Cannot parse config file "\/etc\/kp.yaml": /);
  rejects(`${HEADER}mode: ipvs\nmode: iptables\n`, /^Cannot parse config file .*unique/);
  rejects(
    "- a\n- b\n",
    /^Invalid config file "\/etc\/kp.yaml": expected a KubeProxyConfiguration mapping/,
  );
});

Deno.test("parseCommandLine() names the file field when a file value is invalid", () => {
  assert.throws(
    () => withFile(`${HEADER}iptables:\n  masqueradeBit: 40\n`),
    /Invalid iptables.masqueradeBit "40" in \/etc\/kp.yaml: expected an integer from 0 to 31$/,
  );
  assert.throws(
    () => withFile(`${HEADER}detectLocalMode: BridgeInterface\n`),
    /Invalid detectLocal.bridgeInterface "" in \/etc\/kp.yaml/,
  );
});

Deno.test("parseCommandLine() reports a config file it cannot read", () => {
  assert.throws(
    () =>
      parseCommandLine(["--config=/nope.yaml"], {
        modeSections: MODE_CONFIG_SECTIONS,
        readTextFile: () => {
          throw new Error("No such file or directory");
        },
        hostname: () => "h",
      }),
    /Cannot read --config file "\/nope.yaml": No such file or directory$/,
  );
});

Deno.test("parseCommandLine() lets the config file win over ordinary flags", () => {
  const c = withFile(`${HEADER}mode: ipvs\niptables:\n  masqueradeBit: 10\n`, [
    "--proxy-mode=nftables",
    "--iptables-masquerade-bit=3",
    "--kubeconfig=/flag/kubeconfig",
    "--cluster-cidr=10.0.0.0/8",
    "--masquerade-all",
  ]).config;
  assert.equal(c.mode, "ipvs");
  assert.equal(c.iptables.masqueradeBit, 10);
  assert.equal(c.clientConnection.kubeconfig, "");
  assert.deepEqual(c.clusterCIDRs, []);
  assert.equal(c.masqueradeAll, false);
});

Deno.test("parseCommandLine() applies hostname, logging and our own flags over the file", () => {
  const text = `${HEADER}hostnameOverride: from-file\nlogging:\n  verbosity: 1\n  format: text\n`;
  const c = withFile(text, [
    "--hostname-override=From-Flag",
    "-v=6",
    "--logging-format=json",
    "--manifests=/srv/m",
    "--node-ip=10.1.1.1",
    "--master=https://api:6443",
  ]).config;
  assert.equal(c.hostnameOverride, "from-flag");
  assert.equal(c.logging.verbosity, 6);
  assert.equal(c.logging.format, "json");
  assert.equal(c.manifests, "/srv/m");
  assert.deepEqual(c.nodeIPs, ["10.1.1.1"]);
  assert.equal(c.master, "https://api:6443");
});

Deno.test("parseCommandLine() keeps the file's logging settings when no logging flag is given", () => {
  const c = withFile(`${HEADER}hostnameOverride: from-file\nlogging:\n  verbosity: 3\n`).config;
  assert.equal(c.logging.verbosity, 3);
  assert.equal(c.hostnameOverride, "from-file");
});
