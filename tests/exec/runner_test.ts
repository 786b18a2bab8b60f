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
    new TextEncoder().encode((await stdinText({ cmd: "", args: [], stdinChunks: chunks }))!),
  );
  const hex = [...new Uint8Array(expected)].map((b) => b.toString(16).padStart(2, "0")).join("");
  assert.equal(out.stdout.split(" ")[0], hex);
});

Deno.test("denoCommandRunner writes multi-byte text intact across its 64 KiB encoding buffer", async () => {
  // Pieces larger than the buffer, with 2-, 3- and 4-byte characters falling on its edges.
  const piece = (i: number) => `${i}:` + "aé€😀".repeat(20_000 + i) + "\n";
  async function* stream(): AsyncGenerator<string> {
    for (let i = 0; i < 5; i++) yield piece(i);
  }
  const input = Array.from({ length: 5 }, (_, i) => piece(i)).join("");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(input));
  const hex = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  for (const given of [{ stdin: input }, { stdinStream: stream() }]) {
    const out = await denoCommandRunner({ cmd: "sha256sum", args: [], ...given });
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout.split(" ")[0], hex);
  }
});

Deno.test("stdinText() joins stdinChunks or a stdinStream, else returns stdin", async () => {
  assert.equal(await stdinText({ cmd: "x", args: [], stdinChunks: ["a\n", "b\n"] }), "a\nb\n");
  assert.equal(
    await stdinText({ cmd: "x", args: [], stdinStream: stream(["c\n", "d\n"]) }),
    "c\nd\n",
  );
  assert.equal(await stdinText({ cmd: "x", args: [], stdin: "plain" }), "plain");
  assert.equal(await stdinText({ cmd: "x", args: [] }), undefined);
});

/** The items as an async stream, one per turn of the event loop. */
async function* stream(items: readonly string[]): AsyncGenerator<string> {
  for (const item of items) {
    await Promise.resolve();
    yield item;
  }
}

Deno.test("denoCommandRunner writes a stdinStream as it is made: the command sees early pieces before later ones exist", async () => {
  // The command echoes each line as it reads it; the producer waits for the echo of the first
  // line before making the second, which only works if the first was written on its own.
  const file = await Deno.makeTempFile();
  try {
    const producer = async function* (): AsyncGenerator<string> {
      yield "first\n";
      const deadline = Date.now() + 5_000;
      while (!(await Deno.readTextFile(file)).includes("first")) {
        if (Date.now() > deadline) throw new Error("The first piece never reached the command");
        await new Promise((r) => setTimeout(r, 10));
      }
      yield "second\n";
    };
    const out = await denoCommandRunner({
      cmd: "sh",
      args: ["-c", `while read l; do echo "$l" >> ${file}; done; cat ${file}`],
      stdinStream: producer(),
    });
    assert.equal(out.code, 0, out.stderr);
    assert.equal(out.stdout, "first\nsecond\n");
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("denoCommandRunner ends stdin when the stdinStream throws, then throws the producer's error", async () => {
  const file = await Deno.makeTempFile();
  try {
    const producer = async function* (): AsyncGenerator<string> {
      yield "partial\n";
      throw new RangeError("read failed");
    };
    await assert.rejects(
      denoCommandRunner({ cmd: "sh", args: ["-c", `cat > ${file}`], stdinStream: producer() }),
      (err) => err instanceof RangeError && err.message === "read failed",
    );
    // The command saw the input end (it ran to completion) after the piece made before the error.
    assert.equal(await Deno.readTextFile(file), "partial\n");
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("denoCommandRunner still reports the exit code when the command stops reading early", async () => {
  const out = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "exit 3"],
    stdinChunks: pieces(300, 16_384),
  });
  assert.equal(out.code, 3);
  const streamed = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "exit 4"],
    stdinStream: stream([...pieces(300, 16_384)]),
  });
  assert.equal(streamed.code, 4);
});

Deno.test("denoCommandRunner stops reading at the line stdoutUntil accepts, ends the command and returns code 0", async () => {
  const started = performance.now();
  const out = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "seq 1 100000000; exit 3"],
    stdoutUntil: (line) => line === "1000",
  });
  assert.equal(out.code, 0);
  assert.equal(out.stdout.split("\n").filter((l) => l !== "").at(-1), "1000");
  assert.ok(out.stdout.startsWith("1\n2\n3\n"));
  // seq to 10^8 alone takes far longer than this: the command was ended, not waited for.
  assert.ok(performance.now() - started < 20_000);
});

Deno.test("denoCommandRunner ends the command as soon as stdoutUntil accepts, not when its next write fails", async () => {
  // Like iptables-legacy-save fetching its next table: silent work after the line read last.
  const dir = await Deno.makeTempDir({ prefix: "kw-until-" });
  try {
    const out = await denoCommandRunner({
      cmd: "sh",
      args: ["-c", `echo first; sleep 0.3; touch ${dir}/went-on; echo second`],
      stdoutUntil: (line) => line === "first",
    });
    assert.equal(out.stdout, "first\n");
    await new Promise((r) => setTimeout(r, 600));
    assert.equal(await Deno.stat(`${dir}/went-on`).then(() => true, () => false), false);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("denoCommandRunner returns the whole output and the exit code when stdoutUntil never accepts", async () => {
  const out = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "printf 'a\\nb\\nc'; echo oops >&2; exit 3"],
    stdoutUntil: () => false,
  });
  assert.equal(out.code, 3);
  assert.equal(out.stdout, "a\nb\nc");
  assert.equal(out.stderr, "oops\n");
});

Deno.test("denoCommandRunner returns only the lines stdoutKeep accepts, up to stdoutUntil's", async () => {
  const seen: string[] = [];
  const out = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "seq 1 100000000"],
    stdoutKeep: (line) => {
      seen.push(line);
      return line.endsWith("77");
    },
    stdoutUntil: (line) => line === "1000",
  });
  assert.equal(out.code, 0);
  assert.equal(out.stdout, "77\n177\n277\n377\n477\n577\n677\n777\n877\n977\n");
  assert.equal(seen.length, 1000);

  // Without stdoutUntil the whole output is read: a last line without a newline included.
  const all = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "printf 'a1\\nb\\na2\\nb\\na3'; exit 2"],
    stdoutKeep: (line) => line.startsWith("a"),
  });
  assert.deepEqual([all.code, all.stdout], [2, "a1\na2\na3"]);
  const dropped = await denoCommandRunner({
    cmd: "sh",
    args: ["-c", "printf 'a1\\nb'"],
    stdoutKeep: (line) => line.startsWith("a"),
  });
  assert.equal(dropped.stdout, "a1\n");
});
