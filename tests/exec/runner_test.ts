import assert from "node:assert/strict";
import { denoCommandRunner, stdinText } from "../../lib/exec/mod.ts";

/** Pieces that can be iterated more than once, as CommandInput.stdinChunks must be. */
function pieces(n: number, size: number): Iterable<string> {
  return {
    *[Symbol.iterator]() {
      for (let i = 0; i < n; i++) yield `${String(i).padStart(4, "0")}${"x".repeat(size - 5)}\n`;
    },
  };
}

Deno.test("denoCommandRunner writes stdinChunks in order, larger than any pipe buffer", async () => {
  const chunks = pieces(300, 16_384); // ~5 MB
  const out = await denoCommandRunner({ cmd: "sha256sum", args: [], stdinChunks: chunks });
  assert.equal(out.code, 0, out.stderr);
  const expected = await crypto.subtle.digest(
    "SHA-256",
    new TextEncoder().encode(stdinText({ cmd: "", args: [], stdinChunks: chunks })),
  );
  const hex = [...new Uint8Array(expected)].map((b) => b.toString(16).padStart(2, "0")).join("");
  assert.equal(out.stdout.split(" ")[0], hex);
});

Deno.test("stdinText() joins stdinChunks, else returns stdin", () => {
  assert.equal(stdinText({ cmd: "x", args: [], stdinChunks: ["a\n", "b\n"] }), "a\nb\n");
  assert.equal(stdinText({ cmd: "x", args: [], stdin: "plain" }), "plain");
  assert.equal(stdinText({ cmd: "x", args: [] }), undefined);
});

Deno.test("denoCommandRunner still reports the exit code when the command stops reading early", async () => {
  const out = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "exit 3"],
    stdinChunks: pieces(300, 16_384),
  });
  assert.equal(out.code, 3);
});
