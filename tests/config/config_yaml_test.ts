import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  configToYaml,
  decodeConfigFile,
  defaultConfig,
  parseCommandLine,
  type ProxyConfig,
} from "../../lib/config/mod.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";

/** The fields the file format carries (ours are not part of v1alpha1). */
function fileFields(c: ProxyConfig): Omit<ProxyConfig, "master" | "manifests" | "nodeIPs"> {
  const { master: _m, manifests: _s, nodeIPs: _n, ...rest } = c;
  return rest;
}

Deno.test("configToYaml() writes the defaults as upstream's v1alpha1 file does", () => {
  const doc = parse(
    configToYaml(defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }), {
      modeSections: MODE_CONFIG_SECTIONS,
    }),
  );
  assert.equal(doc.apiVersion, "kubeproxy.config.k8s.io/v1alpha1");
  assert.equal(doc.kind, "KubeProxyConfiguration");
  assert.equal(doc.mode, "iptables");
  assert.equal(doc.healthzBindAddress, "0.0.0.0:10256");
  assert.equal(doc.metricsBindAddress, "127.0.0.1:10249");
  assert.equal(doc.configSyncPeriod, "15m0s");
  assert.deepEqual(doc.iptables, {
    localhostNodePorts: true,
    masqueradeAll: false,
    masqueradeBit: 14,
    minSyncPeriod: "1s",
    syncPeriod: "30s",
  });
  assert.equal(doc.conntrack.tcpEstablishedTimeout, "24h0m0s");
  assert.equal(doc.conntrack.tcpCloseWaitTimeout, "1h0m0s");
  assert.equal(doc.nodePortAddresses, null);
  assert.equal(doc.clusterCIDR, "");
  assert.equal(doc.oomScoreAdj, -999);
  assert.equal("featureGates" in doc, false);
  assert.equal("manifests" in doc, false);
});

Deno.test("configToYaml() sorts keys as upstream's writer does", () => {
  const keys = Object.keys(
    parse(
      configToYaml(defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }), {
        modeSections: MODE_CONFIG_SECTIONS,
      }),
    ),
  );
  assert.deepEqual(keys, [...keys].sort());
});

Deno.test("configToYaml() output decodes back to the same configuration", () => {
  const { config } = parseCommandLine([
    "--proxy-mode=ipvs",
    "--ipvs-scheduler=sh",
    "--ipvs-sync-period=1m30s",
    "--ipvs-min-sync-period=500ms",
    "--ipvs-exclude-cidrs=10.9.0.0/16",
    "--cluster-cidr=10.0.0.0/8,fd00::/48",
    "--nodeport-addresses=192.168.0.0/16",
    "--feature-gates=PreferSameTrafficDistribution=false",
    "--conntrack-udp-timeout=45s",
    "--bind-address=::1",
    "--healthz-bind-address=[::]:9000",
    "--hostname-override=node-9",
    "--logging-format=json",
    "-v=7",
  ], { modeSections: MODE_CONFIG_SECTIONS, hostname: () => "h" });
  const yaml = configToYaml(config, { modeSections: MODE_CONFIG_SECTIONS });
  const again = decodeConfigFile(yaml, "/tmp/written.yaml", { modeSections: MODE_CONFIG_SECTIONS });
  assert.deepEqual(fileFields(again), fileFields(config));
  assert.equal(configToYaml(again, { modeSections: MODE_CONFIG_SECTIONS }), yaml);
});

Deno.test("configToYaml() round-trips a --write-config-to run with its unset node name", () => {
  const cl = parseCommandLine(["--write-config-to=/tmp/out.yaml", "--proxy-mode=nftables"], {
    modeSections: MODE_CONFIG_SECTIONS,
    hostname: () => "h",
  });
  assert.equal(cl.command, "write-config");
  const doc = parse(configToYaml(cl.config, { modeSections: MODE_CONFIG_SECTIONS }));
  assert.equal(doc.hostnameOverride, "");
  assert.deepEqual(doc.nodePortAddresses, ["primary"]);
  const again = parseCommandLine(["--config=/tmp/out.yaml"], {
    modeSections: MODE_CONFIG_SECTIONS,
    hostname: () => "h",
    readTextFile: () => configToYaml(cl.config, { modeSections: MODE_CONFIG_SECTIONS }),
  });
  assert.equal(again.config.mode, "nftables");
  assert.equal(again.config.hostnameOverride, "h");
});
