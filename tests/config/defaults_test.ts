import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import assert from "node:assert/strict";
import { defaultConfig } from "../../lib/config/mod.ts";

Deno.test("defaultConfig() matches upstream kube-proxy's defaults", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  assert.equal(c.bindAddress, "0.0.0.0");
  assert.equal(c.healthzBindAddress, "0.0.0.0:10256");
  assert.equal(c.metricsBindAddress, "127.0.0.1:10249");
  assert.equal(c.mode, "iptables");
  assert.deepEqual(c.iptables, {
    masqueradeBit: 14,
    masqueradeAll: false,
    localhostNodePorts: true,
    syncPeriodMs: 30_000,
    minSyncPeriodMs: 1000,
  });
  assert.equal(c.ipvs.syncPeriodMs, 30_000);
  assert.equal(c.ipvs.minSyncPeriodMs, 0);
  assert.equal(c.ipvs.scheduler, "");
  assert.deepEqual(c.nftables, {
    masqueradeBit: 14,
    masqueradeAll: false,
    syncPeriodMs: 30_000,
    minSyncPeriodMs: 1000,
  });
  assert.deepEqual(c.conntrack, {
    maxPerCore: 32768,
    min: 131072,
    tcpEstablishedTimeoutMs: 24 * 3_600_000,
    tcpCloseWaitTimeoutMs: 3_600_000,
    tcpBeLiberal: false,
    udpTimeoutMs: 0,
    udpStreamTimeoutMs: 0,
  });
  assert.equal(c.configSyncPeriodMs, 15 * 60_000);
  assert.equal(c.oomScoreAdj, -999);
  assert.equal(c.clientConnection.qps, 5);
  assert.equal(c.clientConnection.burst, 10);
  assert.equal(c.clientConnection.contentType, "application/vnd.kubernetes.protobuf");
  assert.equal(c.detectLocalMode, "ClusterCIDR");
  assert.deepEqual(c.nodePortAddresses, []);
  assert.deepEqual(c.clusterCIDRs, []);
  assert.deepEqual(c.logging.format, "text");
  assert.equal(c.logging.verbosity, 0);
  assert.equal(c.logging.flushFrequencyMs, 5000);
});

Deno.test("defaultConfig() resolves the iptables section into the mode-independent fields", () => {
  const c = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  assert.equal(c.syncPeriodMs, 30_000);
  assert.equal(c.minSyncPeriodMs, 1000);
  assert.equal(c.masqueradeBit, 14);
  assert.equal(c.masqueradeAll, false);
});

Deno.test("defaultConfig() returns a fresh object each time", () => {
  const a = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  a.iptables.masqueradeBit = 3;
  a.nodePortAddresses.push("10.0.0.0/8");
  const b = defaultConfig({ modeSections: MODE_CONFIG_SECTIONS });
  assert.equal(b.iptables.masqueradeBit, 14);
  assert.deepEqual(b.nodePortAddresses, []);
});

Deno.test("defaultConfig() takes each mode's section from the sections it is given", () => {
  const sections = {
    ...MODE_CONFIG_SECTIONS,
    ipvs: {
      ...MODE_CONFIG_SECTIONS.ipvs,
      defaults: () => ({ ...MODE_CONFIG_SECTIONS.ipvs.defaults(), scheduler: "sh" }),
    },
  };
  assert.equal(defaultConfig({ modeSections: sections }).ipvs.scheduler, "sh");
  assert.equal(defaultConfig({ modeSections: MODE_CONFIG_SECTIONS }).ipvs.scheduler, "");
});
