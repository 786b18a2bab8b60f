/** The uncompressed kernel qemu boots directly (PVH), skipping slow emulated decompression. */
import { type CommandRunner, runChecked } from "../../lib/exec/mod.ts";

const XZ_MAGIC = [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00];
const ELF_MAGIC = [0x7f, 0x45, 0x4c, 0x46];

/** Offset of the first XZ stream header in a bzImage; -1 when there is none. */
export function findXzPayload(image: Uint8Array): number {
  outer: for (let i = 0; i + XZ_MAGIC.length <= image.length; i++) {
    for (let j = 0; j < XZ_MAGIC.length; j++) {
      if (image[i + j] !== XZ_MAGIC[j]) continue outer;
    }
    return i;
  }
  return -1;
}

/** Whether bytes start with the ELF magic. */
export function isElf(bytes: Uint8Array): boolean {
  return ELF_MAGIC.every((b, i) => bytes[i] === b);
}

/**
 * Writes the ELF kernel inside `vmlinuz` to `out` (with the `xz` CLI; the bytes after the
 * stream are ignored). `workDir` holds the compressed payload meanwhile.
 */
export async function extractVmlinux(
  runner: CommandRunner,
  vmlinuz: string,
  out: string,
  workDir: string,
): Promise<void> {
  const image = await Deno.readFile(vmlinuz);
  const at = findXzPayload(image);
  if (at < 0) throw new Error(`No XZ payload in kernel image "${vmlinuz}": expected an xz bzImage`);
  const payload = `${workDir}/vmlinux.xz`;
  await Deno.writeFile(payload, image.subarray(at));
  await runChecked(runner, {
    cmd: "sh",
    args: ["-c", 'xz -dcq --single-stream "$1" > "$2"', "sh", payload, out],
  });
  await Deno.remove(payload);
  const head = new Uint8Array(4);
  const f = await Deno.open(out);
  try {
    await f.read(head);
  } finally {
    f.close();
  }
  if (!isElf(head)) throw new Error(`Kernel payload of "${vmlinuz}" is not an ELF image`);
}
