/** Reading what a file gained since the last look (the guest's output while it runs). */

/** Follows one growing file by byte offset; a missing file reads as empty. */
export class FileTail {
  private offset = 0;
  private readonly decoder = new TextDecoder();

  /** Follows `path` from its start. */
  constructor(readonly path: string) {}

  /** The text appended since the previous call ("" when nothing was, or no file yet). */
  async read(): Promise<string> {
    let file: Deno.FsFile;
    try {
      file = await Deno.open(this.path);
    } catch (err) {
      if (err instanceof Deno.errors.NotFound) return "";
      throw err;
    }
    try {
      await file.seek(this.offset, Deno.SeekMode.Start);
      let text = "";
      const buf = new Uint8Array(64 * 1024);
      for (;;) {
        const n = await file.read(buf);
        if (n === null || n === 0) break;
        this.offset += n;
        text += this.decoder.decode(buf.subarray(0, n), { stream: true });
      }
      return text;
    } finally {
      file.close();
    }
  }
}
