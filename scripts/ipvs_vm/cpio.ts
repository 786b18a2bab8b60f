/** A minimal writer of the `newc` cpio format the kernel unpacks as an initramfs. */

/** One archive member; paths are relative (no leading slash), parents listed before children. */
export type CpioEntry =
  | { readonly kind: "dir"; readonly path: string; readonly mode?: number }
  | {
    readonly kind: "file";
    readonly path: string;
    readonly data: Uint8Array;
    readonly mode?: number;
  }
  | { readonly kind: "symlink"; readonly path: string; readonly target: string };

const encoder = new TextEncoder();
const S_IFDIR = 0o040000;
const S_IFREG = 0o100000;
const S_IFLNK = 0o120000;

function hex8(n: number): string {
  return n.toString(16).padStart(8, "0");
}

function pad4(n: number): number {
  return (4 - (n % 4)) % 4;
}

function header(ino: number, mode: number, nlink: number, size: number, name: string): string {
  const fields = [ino, mode, 0, 0, nlink, 0, size, 0, 0, 0, 0, encoder.encode(name).length + 1, 0];
  return `070701${fields.map(hex8).join("")}`;
}

/** Serialises entries (and the trailer) into one newc archive. */
export function newcArchive(entries: readonly CpioEntry[]): Uint8Array {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const push = (bytes: Uint8Array) => {
    chunks.push(bytes);
    size += bytes.length;
    const pad = pad4(size);
    if (pad > 0) {
      chunks.push(new Uint8Array(pad));
      size += pad;
    }
  };
  const member = (ino: number, mode: number, nlink: number, name: string, data: Uint8Array) => {
    push(encoder.encode(`${header(ino, mode, nlink, data.length, name)}${name}\0`));
    if (data.length > 0) push(data);
  };
  entries.forEach((e, i) => {
    if (e.path.startsWith("/") || e.path === "") {
      throw new Error(`Invalid cpio path "${e.path}": expected a relative path`);
    }
    const ino = i + 1;
    if (e.kind === "dir") member(ino, S_IFDIR | (e.mode ?? 0o755), 2, e.path, new Uint8Array());
    else if (e.kind === "file") member(ino, S_IFREG | (e.mode ?? 0o644), 1, e.path, e.data);
    else member(ino, S_IFLNK | 0o777, 1, e.path, encoder.encode(e.target));
  });
  member(0, 0, 1, "TRAILER!!!", new Uint8Array());
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
