import assert from "node:assert/strict";
import { agentScript, initScript } from "../../../scripts/ipvs_vm/mod.ts";

async function syntaxOk(shell: string, script: string): Promise<string> {
  const out = await new Deno.Command(shell, { args: ["-n"], stdin: "piped", stderr: "piped" })
    .spawn();
  const w = out.stdin.getWriter();
  await w.write(new TextEncoder().encode(script));
  await w.close();
  const res = await out.output();
  return res.code === 0 ? "" : new TextDecoder().decode(res.stderr);
}

Deno.test("initScript() and agentScript() are valid shell", async () => {
  // /init runs under busybox sh (POSIX): dash is the strictest POSIX shell at hand.
  assert.equal(await syntaxOk("dash", initScript({ msize: 262144, upperSize: "75%" })), "");
  assert.equal(await syntaxOk("bash", agentScript({ pollSeconds: 0.05 })), "");
});

Deno.test("initScript() loads modules before mounting the shares and hands over to the agent", () => {
  const init = initScript({ msize: 131072, upperSize: "50%" });
  const at = (s: string) => init.indexOf(s);
  assert.ok(at("insmod") > 0 && at("insmod") < at("hostroot /lower"));
  assert.match(init, /msize=131072,ro,cache=loose hostroot \/lower/);
  assert.match(init, /exec switch_root \/newroot \/bin\/bash \/ipvs-guest-io\/agent\.sh/);
});
