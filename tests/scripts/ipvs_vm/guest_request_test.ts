import assert from "node:assert/strict";
import { renderRequestScript, shellQuote } from "../../../scripts/ipvs_vm/mod.ts";

async function bash(script: string): Promise<{ code: number; stdout: string }> {
  const out = await new Deno.Command("bash", { args: ["-c", script], stdout: "piped" }).output();
  return { code: out.code, stdout: new TextDecoder().decode(out.stdout) };
}

const NASTY = ["plain", "it's", "$HOME `id` $(id)", "new\nline", "", " spaced ", "*", "\\"];

Deno.test("shellQuote() keeps every word literal through a real shell", async () => {
  const out = await bash(`printf '%s\\0' ${NASTY.map(shellQuote).join(" ")}`);
  assert.deepEqual(out.stdout.split("\0").slice(0, -1), NASTY);
});

Deno.test("renderRequestScript() runs the command with its env, directory, stdin and a timeout", async () => {
  const dir = await Deno.makeTempDir({ prefix: "kvm-req-" });
  try {
    await Deno.writeTextFile(`${dir}/in`, "from stdin\n");
    const script = renderRequestScript(
      {
        cmd: "sh",
        args: ["-c", 'echo "$A|$B|$(pwd)"; cat; exit 7', "it's"],
        env: { B: "b 'two'" },
        cwd: dir,
      },
      { A: "$base", B: "overridden" },
      `${dir}/in`,
    );
    assert.match(script, /exec timeout -k 5 60 /);
    const out = await bash(script);
    assert.equal(out.code, 7);
    assert.equal(out.stdout, `$base|b 'two'|${dir}\nfrom stdin\n`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("renderRequestScript() kills a command past its timeout with exit 124", async () => {
  const script = renderRequestScript({ cmd: "sleep", args: ["5"], timeoutMs: 200 }, {}, null);
  const started = Date.now();
  assert.equal((await bash(script)).code, 124);
  assert.ok(Date.now() - started < 4000);
});

Deno.test("renderRequestScript() refuses bad environment names and timeouts", () => {
  assert.throws(
    () => renderRequestScript({ cmd: "true", env: { "A;rm": "x" } }, {}, null),
    /Invalid environment variable name "A;rm"/,
  );
  assert.throws(() => renderRequestScript({ cmd: "true", timeoutMs: 0 }, {}, null), /timeoutMs/);
});
