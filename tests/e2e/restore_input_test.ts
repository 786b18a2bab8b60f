/**
 * The real iptables-legacy-restore against the way our runner feeds it. `-w N` arms an alarm
 * when the xtables lock is taken and never cancels it; a read of stdin still blocked when it
 * fires returns early and the restore fails with "COMMIT expected". So the runner must have
 * the whole input ready before the command starts, even when its pieces are slow to make.
 */
import assert from "node:assert/strict";
import { denoCommandRunner } from "../../lib/exec/mod.ts";

const NS = "kri-restore";

async function ip(...args: string[]): Promise<Deno.CommandOutput> {
  return await new Deno.Command("ip", { args, stdout: "piped", stderr: "piped" }).output();
}

/** Pieces of restore input whose last piece takes `slowMs` of CPU to make (a starved producer). */
function slowPieces(slowMs: number): Iterable<string> {
  return {
    *[Symbol.iterator]() {
      yield "*nat\n:KRI-TEST - [0:0]\n";
      const until = performance.now() + slowMs;
      while (performance.now() < until) { /* a producer that cannot keep up */ }
      yield "-A KRI-TEST -j RETURN\nCOMMIT\n";
    },
  };
}

Deno.test("e2e: a restore whose input is slow to make still applies under iptables-legacy-restore -w 1", async () => {
  await ip("netns", "del", NS);
  const added = await ip("netns", "add", NS);
  assert.equal(added.code, 0, new TextDecoder().decode(added.stderr));
  try {
    const out = await denoCommandRunner({
      cmd: "ip",
      args: ["netns", "exec", NS, "iptables-legacy-restore", "-w", "1", "--noflush"],
      stdinChunks: slowPieces(2_500),
    });
    assert.equal(out.code, 0, out.stderr);
    const saved = await ip("netns", "exec", NS, "iptables-legacy-save", "-t", "nat");
    assert.match(new TextDecoder().decode(saved.stdout), /^-A KRI-TEST -j RETURN$/m);
  } finally {
    await ip("netns", "del", NS);
  }
});
