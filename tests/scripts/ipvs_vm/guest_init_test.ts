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

Deno.test("initScript() stacks extra read-only layers over the root, first one topmost", () => {
  const plain = initScript({ msize: 262144, upperSize: "75%" });
  assert.match(plain, /lowerdir=\/lower,upperdir=/);
  const init = initScript({
    msize: 262144,
    upperSize: "75%",
    extraLowerTags: ["program", "extra"],
    exec: "/sbin/init",
  });
  assert.match(init, /ro,cache=loose program \/lower1 /);
  assert.match(init, /ro,cache=loose extra \/lower2 /);
  assert.match(init, /lowerdir=\/lower1:\/lower2:\/lower,upperdir=/);
  assert.match(init, /exec switch_root \/newroot \/sbin\/init\n$/);
  assert.ok(init.indexOf("program /lower1") < init.indexOf("mount -t overlay"));
});

Deno.test("initScript() refuses an extra tag that is already used or not a plain word", () => {
  for (const tag of ["hostroot", "guestio", "a b", "x;reboot"]) {
    assert.throws(
      () => initScript({ msize: 1, upperSize: "1%", extraLowerTags: [tag] }),
      /Invalid extra lower tag/,
    );
  }
});

Deno.test("agentScript() as a systemd unit mounts nothing and powers off through systemctl", async () => {
  const service = agentScript({ pollSeconds: 0.05, variant: "service" });
  assert.equal(await syntaxOk("bash", service), "");
  assert.doesNotMatch(service, /^mount /m);
  assert.doesNotMatch(service, /sysrq/);
  assert.match(service, /exec systemctl poweroff\n$/);
  // The request loop is the same in both variants.
  const loop = (s: string) => s.slice(s.indexOf('mkdir -p "$io/req"'), s.indexOf("sync\n"));
  assert.equal(loop(service), loop(agentScript({ pollSeconds: 0.05 })));
  const pid1 = agentScript({ pollSeconds: 0.05 });
  assert.match(pid1, /^mount -t proc proc \/proc$/m);
  assert.match(pid1, /echo o > \/proc\/sysrq-trigger/);
});
