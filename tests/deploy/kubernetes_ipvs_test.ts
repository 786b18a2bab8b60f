import assert from "node:assert/strict";
import { decodeConfigFile, validateConfig } from "../../lib/config/mod.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { readPackageList } from "../../scripts/image/mod.ts";
import { only, readDeployText, readDeployYaml } from "./deploy_files.ts";

/** The kernel modules IPVS mode needs, as the README and issue 11 list them. */
const IPVS_MODULES = ["ip_vs", "ip_vs_rr", "ip_vs_wrr", "ip_vs_sh", "nf_conntrack"];

const ipvsObjects = readDeployYaml("kubernetes/daemonset-ipvs.yaml");
const iptablesObjects = readDeployYaml("kubernetes/daemonset.yaml");
const ipvsDaemonSet = only(ipvsObjects, "DaemonSet");
const ipvsConfigMap = only(ipvsObjects, "ConfigMap");
const ipvsPod = ipvsDaemonSet.spec.template.spec;

Deno.test("daemonset-ipvs.yaml ConfigMap selects ipvs mode with rr and passes validateConfig()", () => {
  const config = decodeConfigFile(ipvsConfigMap.data["config.conf"], "config.conf", {
    modeSections: MODE_CONFIG_SECTIONS,
  });
  assert.deepEqual(validateConfig(config, { modeSections: MODE_CONFIG_SECTIONS }), []);
  assert.equal(config.mode, "ipvs");
  assert.equal(config.ipvs.scheduler, "rr");
  assert.equal(config.ipvs.strictARP, false);
  assert.deepEqual(config.ipvs.excludeCIDRs, []);
  // The kubeconfig is the same as the iptables variant's: only the mode differs.
  const iptablesConfigMap = only(iptablesObjects, "ConfigMap");
  assert.equal(ipvsConfigMap.data["kubeconfig.conf"], iptablesConfigMap.data["kubeconfig.conf"]);
  assert.deepEqual(ipvsConfigMap.metadata, iptablesConfigMap.metadata);
});

Deno.test("daemonset-ipvs.yaml replaces daemonset.yaml: same objects and proxy container", () => {
  const iptablesDaemonSet = only(iptablesObjects, "DaemonSet");
  assert.deepEqual(ipvsDaemonSet.metadata, iptablesDaemonSet.metadata);
  const { initContainers, ...rest } = ipvsPod;
  assert.ok(Array.isArray(initContainers));
  assert.deepEqual(rest, iptablesDaemonSet.spec.template.spec);
});

Deno.test("daemonset-ipvs.yaml loads the IPVS modules from the node's /lib/modules first", async () => {
  const init = ipvsPod.initContainers;
  assert.equal(init.length, 1);
  const [loader] = init;
  assert.deepEqual(loader.command, ["modprobe", "-a", ...IPVS_MODULES]);
  assert.equal(loader.image, ipvsPod.containers[0].image);
  assert.equal(loader.securityContext.privileged, true);
  const mount = loader.volumeMounts.find((m: { mountPath: string }) =>
    m.mountPath === "/lib/modules"
  );
  const volume = ipvsPod.volumes.find((v: { name: string }) => v.name === mount?.name);
  assert.equal(volume?.hostPath?.path, "/lib/modules");
  // modprobe comes from kmod, which the image must carry.
  assert.ok((await readPackageList()).includes("kmod"), "kmod in deploy/image/packages.txt");
});

Deno.test("modules-load.d file lists the same IPVS modules, one per line", () => {
  const text = readDeployText("modules-load.d/deno-kube-proxy-ipvs.conf");
  const modules = text.split("\n").map((l) => l.trim()).filter((l) =>
    l !== "" && !l.startsWith("#")
  );
  assert.deepEqual(modules, IPVS_MODULES);
});
