import assert from "node:assert/strict";
import { loadKubeConfig, resolveCredentials } from "../../lib/k8s/mod.ts";
import { decodeConfigFile, parseCommandLine, validateConfig } from "../../lib/config/mod.ts";
import { MODE_CONFIG_SECTIONS } from "../../lib/backends/mod.ts";
import { imageReference } from "../../scripts/image/mod.ts";
import { configMapFiles, expandArgs, only, readDeployYaml } from "./deploy_files.ts";

const SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount";
const rbac = readDeployYaml("kubernetes/rbac.yaml");
const manifests = readDeployYaml("kubernetes/daemonset.yaml");
const daemonSet = only(manifests, "DaemonSet");
const configMap = only(manifests, "ConfigMap");
const pod = daemonSet.spec.template.spec;
const container = pod.containers[0];

function readMounted(path: string): string {
  const text = configMapFiles(daemonSet, [configMap]).get(path);
  if (text === undefined) throw new Error(`No ConfigMap key is mounted at "${path}"`);
  return text;
}

Deno.test("daemonset.yaml ConfigMap holds a KubeProxyConfiguration decodeConfigFile() accepts", () => {
  const config = decodeConfigFile(configMap.data["config.conf"], "config.conf", {
    modeSections: MODE_CONFIG_SECTIONS,
  });
  assert.deepEqual(validateConfig(config, { modeSections: MODE_CONFIG_SECTIONS }), []);
  assert.equal(config.mode, "iptables");
});

Deno.test("daemonset.yaml kubeconfig authenticates with the pod's service-account token", async () => {
  const config = decodeConfigFile(configMap.data["config.conf"], "config.conf", {
    modeSections: MODE_CONFIG_SECTIONS,
  });
  // The kubeconfig the config names must be mounted from the same ConfigMap.
  const text = readMounted(config.clientConnection.kubeconfig);
  const dir = Deno.makeTempDirSync({ prefix: "bn-sa-" });
  try {
    Deno.writeTextFileSync(`${dir}/token`, "sa-token");
    Deno.writeTextFileSync(`${dir}/ca.crt`, "");
    Deno.writeTextFileSync(`${dir}/kubeconfig`, text.replaceAll(SERVICE_ACCOUNT_DIR, dir));
    const { kubeConfig: kc, server } = loadKubeConfig({
      kubeconfig: `${dir}/kubeconfig`,
      master: "",
    });
    assert.equal((await resolveCredentials(kc)).headers.Authorization, "Bearer sa-token");
    assert.equal(kc.getCurrentCluster()?.caFile, `${dir}/ca.crt`);
    assert.match(server, /^https:\/\//);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
});

Deno.test("daemonset.yaml args are accepted by parseCommandLine() with the mounted config", () => {
  const env = { NODE_NAME: "Worker-1" };
  assert.equal(container.env[0].valueFrom.fieldRef.fieldPath, "spec.nodeName");
  const line = parseCommandLine(expandArgs(container.args, env), {
    modeSections: MODE_CONFIG_SECTIONS,
    readTextFile: readMounted,
    hostname: () => "not-the-node",
  });
  assert.equal(line.command, "run");
  assert.equal(line.configFile, "/var/lib/kube-proxy/config.conf");
  assert.equal(line.config.hostnameOverride, "worker-1");
  assert.deepEqual(line.config.clusterCIDRs, ["10.244.0.0/16"]);
});

Deno.test("daemonset.yaml runs privileged on the host network with the xtables lock and modules", () => {
  assert.equal(pod.hostNetwork, true);
  assert.equal(container.securityContext.privileged, true);
  const hostPaths = new Map<string, string>(
    pod.volumes.filter((v: { hostPath?: unknown }) => v.hostPath).map((
      v: { name: string; hostPath: { path: string } },
    ) => [v.name, v.hostPath.path]),
  );
  const mounted = new Map<string, string>(
    container.volumeMounts.map((m: { name: string; mountPath: string }) => [m.mountPath, m.name]),
  );
  assert.equal(hostPaths.get(mounted.get("/run/xtables.lock")!), "/run/xtables.lock");
  assert.equal(hostPaths.get(mounted.get("/lib/modules")!), "/lib/modules");
});

Deno.test("rbac.yaml grants the DaemonSet's service account what kube-proxy needs", () => {
  const account = only(rbac, "ServiceAccount");
  const role = only(rbac, "ClusterRole");
  const binding = only(rbac, "ClusterRoleBinding");
  assert.equal(pod.serviceAccountName, account.metadata.name);
  assert.equal(daemonSet.metadata.namespace, account.metadata.namespace);
  assert.deepEqual(binding.roleRef, {
    apiGroup: "rbac.authorization.k8s.io",
    kind: "ClusterRole",
    name: role.metadata.name,
  });
  assert.deepEqual(binding.subjects, [{
    kind: "ServiceAccount",
    name: account.metadata.name,
    namespace: account.metadata.namespace,
  }]);

  const allows = (group: string, resource: string, verb: string) =>
    role.rules.some((r: { apiGroups: string[]; resources: string[]; verbs: string[] }) =>
      r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb)
    );
  const needed: [string, string, string[]][] = [
    ["", "services", ["list", "watch"]],
    ["discovery.k8s.io", "endpointslices", ["list", "watch"]],
    ["", "nodes", ["get", "list", "watch"]],
    ["", "events", ["create", "patch"]],
    ["events.k8s.io", "events", ["create", "patch"]],
  ];
  for (const [group, resource, verbs] of needed) {
    for (const verb of verbs) {
      assert.ok(
        allows(group, resource, verb),
        `ClusterRole lacks ${verb} on "${group}/${resource}"`,
      );
    }
  }
});

Deno.test("daemonset.yaml and daemonset-ipvs.yaml run the image `deno task image` tags", () => {
  const deno = JSON.parse(Deno.readTextFileSync(new URL("../../deno.json", import.meta.url)));
  const ipvsPod = only(readDeployYaml("kubernetes/daemonset-ipvs.yaml"), "DaemonSet").spec
    .template.spec;
  const images = [pod, ipvsPod].flatMap((p) =>
    [...p.containers, ...p.initContainers ?? []].map((c: { image: string }) => c.image)
  );
  assert.deepEqual(new Set(images), new Set([imageReference(deno.version)]));
  // The image's entry point is the program: the proxy container passes only its flags.
  assert.equal(container.command, undefined);
});
