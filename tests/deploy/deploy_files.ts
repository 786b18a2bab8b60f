/** Reads the files under deploy/ for the deploy tests: YAML documents and the systemd unit. */
import { parseAllDocuments } from "yaml";

const DEPLOY = new URL("../../deploy/", import.meta.url);

/** A Kubernetes object as read from YAML; fields are checked by the tests that use them. */
// deno-lint-ignore no-explicit-any
export type KubeObject = Record<string, any>;

/** Every document of deploy/<path>, failing on YAML errors. */
export function readDeployYaml(path: string): KubeObject[] {
  const text = Deno.readTextFileSync(new URL(path, DEPLOY));
  return parseAllDocuments(text).map((doc) => {
    if (doc.errors.length > 0) {
      throw new Error(`Cannot parse deploy/${path}: ${doc.errors[0]!.message}`);
    }
    return doc.toJS() as KubeObject;
  });
}

/** The one object of `kind` in `objects`; throws naming the kind when absent or repeated. */
export function only(objects: readonly KubeObject[], kind: string): KubeObject {
  const found = objects.filter((o) => o.kind === kind);
  if (found.length !== 1) {
    throw new Error(`Expected one "${kind}" object, found ${found.length}`);
  }
  return found[0]!;
}

/** The text of deploy/<path>. */
export function readDeployText(path: string): string {
  return Deno.readTextFileSync(new URL(path, DEPLOY));
}

/**
 * Expands `$(VAR)` in container args the way kubelet does, from a map of the container's env
 * values; an unknown variable is left as written, as kubelet leaves it.
 */
export function expandArgs(args: readonly string[], env: Record<string, string>): string[] {
  return args.map((a) => a.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v) => env[v] ?? m));
}

/** Files the container sees from ConfigMap volumes: mount path + "/" + key -> text. */
export function configMapFiles(
  daemonSet: KubeObject,
  configMaps: readonly KubeObject[],
): Map<string, string> {
  const spec = daemonSet.spec.template.spec;
  const container = spec.containers[0];
  const files = new Map<string, string>();
  for (const mount of container.volumeMounts ?? []) {
    const volume = (spec.volumes ?? []).find((v: KubeObject) => v.name === mount.name);
    const cm = configMaps.find((c) => c.metadata.name === volume?.configMap?.name);
    for (const [key, text] of Object.entries(cm?.data ?? {})) {
      files.set(`${mount.mountPath}/${key}`, String(text));
    }
  }
  return files;
}
