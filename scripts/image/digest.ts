/** SHA-256 digests of files and bytes, in OCI's `sha256:<hex>` form. */
import { createHash } from "node:crypto";

/** The OCI digest of bytes or text. */
export function sha256Digest(data: Uint8Array | string): string {
  return `sha256:${createHash("sha256").update(data).digest("hex")}`;
}

/** The OCI digest and size of a file, read in chunks (layers are hundreds of MB). */
export async function fileDigest(path: string): Promise<{ digest: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  using file = await Deno.open(path);
  for await (const chunk of file.readable) {
    hash.update(chunk);
    size += chunk.length;
  }
  return { digest: `sha256:${hash.digest("hex")}`, size };
}

/** The hex part of a `sha256:<hex>` digest; throws on anything else. */
export function digestHex(digest: string): string {
  const m = /^sha256:([0-9a-f]{64})$/.exec(digest);
  if (m === null) throw new Error(`Invalid digest "${digest}": expected sha256:<64 hex digits>`);
  return m[1]!;
}
