/**
 * Builds the node image without a container engine or registry:
 *
 *   deno task image [--api-server HOST[:PORT]]...
 *
 * writes dist/image/oci/ (an OCI image layout) and dist/image/deno-kube-proxy.oci.tar, tagged
 * localhost/deno-kube-proxy:<version>. Load it with `podman load -i <tar>` or
 * `ctr -n k8s.io images import <tar>`. Needs root (mmdebstrap) and the npm registry.
 */
import { parseArgs } from "node:util";
import { buildImage } from "./build_image.ts";

async function main(): Promise<number> {
  const { values } = parseArgs({
    args: Deno.args,
    options: { "api-server": { type: "string", multiple: true, default: [] } },
  });
  const started = Date.now();
  const image = await buildImage({ apiServers: values["api-server"] });
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  const archiveSize = (await Deno.stat(image.archive)).size;
  console.error(
    [
      `image: ${image.reference} (${image.manifestDigest})`,
      `  program: ${image.program.kind} at ${image.program.entrypoint}`,
      ...image.layers.map((l, i) =>
        `  layer ${i + 1}: ${l.digest} ${mb(l.size)}${i === 0 ? " (base)" : " (program)"}`
      ),
      `  ${image.layoutDir}/`,
      `  ${image.archive} ${mb(archiveSize)}`,
      `  built in ${Date.now() - started} ms${image.baseBuilt ? "" : " (base from cache)"}`,
    ].join("\n"),
  );
  return 0;
}

if (import.meta.main) Deno.exit(await main());
