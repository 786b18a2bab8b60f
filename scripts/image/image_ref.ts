/** The image's name as operators load it: `localhost/deno-kube-proxy:<version of deno.json>`. */

/** The repository part of the reference; `localhost/` because no registry serves it. */
export const IMAGE_REPOSITORY = "localhost/deno-kube-proxy";

/** The reference `deno task image` tags, for a project version such as "0.1.0". */
export function imageReference(version: string): string {
  if (!/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/.test(version)) {
    throw new Error(`Invalid image tag "${version}": expected deno.json's version, e.g. "0.1.0"`);
  }
  return `${IMAGE_REPOSITORY}:${version}`;
}
