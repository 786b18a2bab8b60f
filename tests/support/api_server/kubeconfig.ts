/** Writes kubeconfig files pointing at the test API server, readable by the proxy's permissions. */
import { stringify } from "yaml";
import { KUBE_PROXY_TOKEN } from "./auth.ts";
import type { TestPki } from "./certs.ts";

/** Where per-test files go: readable under the `proxy` permission set in deno.json. */
export const KUBE_FILES_ROOT = "/tmp/deno-kube-proxy";

/** Options of writeKubeconfig. */
export interface KubeconfigOptions {
  /** Folder to write into (created); e.g. `${KUBE_FILES_ROOT}/ap-xyz`. */
  readonly dir: string;
  /** Server URL (e.g. server.url, or "https://127.0.0.1:6443" inside a namespace). */
  readonly server: string;
  readonly pki: TestPki;
  /** "token" (default KUBE_PROXY_TOKEN) or "certificate" (the PKI's client certificate). */
  readonly auth?: { readonly token: string } | "certificate";
  /** true embeds certificates as *-data; false (default) copies them next to the file. */
  readonly inline?: boolean;
  /** File name (default "kubeconfig"). */
  readonly fileName?: string;
}

const b64 = (s: string) => btoa(s);

/** Writes the kubeconfig and returns its path. */
export async function writeKubeconfig(opts: KubeconfigOptions): Promise<string> {
  await Deno.mkdir(opts.dir, { recursive: true });
  const auth = opts.auth ?? { token: KUBE_PROXY_TOKEN };
  const inline = opts.inline ?? false;
  const file = async (name: string, text: string) => {
    await Deno.writeTextFile(`${opts.dir}/${name}`, text);
    return `${opts.dir}/${name}`;
  };
  const cluster = inline
    ? { server: opts.server, "certificate-authority-data": b64(opts.pki.caCert) }
    : { server: opts.server, "certificate-authority": await file("ca.crt", opts.pki.caCert) };
  let user: Record<string, string>;
  if (auth === "certificate") {
    user = inline
      ? {
        "client-certificate-data": b64(opts.pki.clientCert),
        "client-key-data": b64(opts.pki.clientKey),
      }
      : {
        "client-certificate": await file("client.crt", opts.pki.clientCert),
        "client-key": await file("client.key", opts.pki.clientKey),
      };
  } else user = { token: auth.token };
  const doc = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [{ name: "test", cluster }],
    users: [{ name: "kube-proxy", user }],
    contexts: [{ name: "test", context: { cluster: "test", user: "kube-proxy" } }],
    "current-context": "test",
  };
  const path = `${opts.dir}/${opts.fileName ?? "kubeconfig"}`;
  await Deno.writeTextFile(path, stringify(doc));
  return path;
}
