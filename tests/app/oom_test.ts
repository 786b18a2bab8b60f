import assert from "node:assert/strict";
import { applyOomScoreAdj } from "../../lib/app/oom.ts";
import { denoCommandRunner } from "../../lib/exec/mod.ts";
import { createMemoryLogger, silentLogger } from "../../lib/log/mod.ts";

Deno.test("applyOomScoreAdj() sets the score of a process with choom", async () => {
  // Raising a score needs no privilege, so a child process of ours is a safe target.
  const child = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    const ok = await applyOomScoreAdj({
      value: 321,
      runner: denoCommandRunner,
      logger: silentLogger,
      pid: child.pid,
    });
    assert.equal(ok, true);
    assert.equal((await Deno.readTextFile(`/proc/${child.pid}/oom_score_adj`)).trim(), "321");
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
});

Deno.test("applyOomScoreAdj() warns and reports false when the kernel refuses", async () => {
  const logger = createMemoryLogger();
  // No such process: choom fails the way a refused write does.
  const ok = await applyOomScoreAdj({
    value: -999,
    runner: denoCommandRunner,
    logger,
    pid: 2 ** 22 + 1,
  });
  assert.equal(ok, false);
  assert.match(logger.lines.join("\n"), /^W.*"Failed to apply oomScoreAdj".*value=-999/m);
});
